// Standalone iceberg-js (1.0.0) smoke client for an Iceberg REST catalog.
//
// Env:
//   ICEBERG_URI        e.g. http://127.0.0.1:1234/iceberg   (NOT .../iceberg/v1 —
//                      iceberg-js appends "v1/..." itself)
//   ICEBERG_WAREHOUSE  warehouse name; iceberg-js calls GET v1/config?warehouse=...
//                      and then uses v1/<overrides.prefix>/... for every call
//   ICEBERG_TOKEN      sent as "Authorization: Bearer <token>" (optional)
//
// Prints one JSON line on success and exits 0; prints the error to stderr and
// exits 1 on any failure.
import { IcebergRestCatalog, IcebergError } from 'iceberg-js';

function fail(msg) {
  throw new Error(msg);
}

function describe(err) {
  if (err instanceof IcebergError) {
    return JSON.stringify({
      error: err.message,
      status: err.status,
      type: err.icebergType ?? null,
      code: err.icebergCode ?? null,
      details: err.status === 0 ? String(err.details) : err.details ?? null,
    });
  }
  return err && err.stack ? err.stack : String(err);
}

async function main() {
  const uri = process.env.ICEBERG_URI || fail('ICEBERG_URI is required');
  const warehouse = process.env.ICEBERG_WAREHOUSE || fail('ICEBERG_WAREHOUSE is required');
  const token = process.env.ICEBERG_TOKEN;

  const catalog = new IcebergRestCatalog({
    baseUrl: uri,
    warehouse,
    auth: token ? { type: 'bearer', token } : { type: 'none' },
  });

  // Fetch config explicitly so a failing /v1/config surfaces as an error:
  // iceberg-js's lazy prefix resolution silently swallows config errors and
  // falls back to "v1/<warehouse>".
  const config = await catalog.loadConfig();
  if (!config || typeof config !== 'object') {
    fail(`unexpected /v1/config response: ${JSON.stringify(config)}`);
  }

  const ns = { namespace: ['js_ns'] };
  const tableId = { namespace: ['js_ns'], name: 'events' };

  // 1. create namespace, ignoring "already exists" (HTTP 409)
  try {
    await catalog.createNamespace(ns);
  } catch (err) {
    if (!(err instanceof IcebergError && err.status === 409)) throw err;
  }

  // 2. create table js_ns.events
  const created = await catalog.createTableResult(ns, {
    name: 'events',
    schema: {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', type: 'long', required: true },
        { id: 2, name: 'name', type: 'string', required: false },
      ],
    },
  });
  if (!created || !created.metadata || !created.metadata['table-uuid']) {
    fail(`create table response lacks metadata.table-uuid: ${JSON.stringify(created)}`);
  }

  // 3. load it
  const before = await catalog.loadTableResult(tableId);
  if (!before || !before.metadata) fail(`load table returned no metadata: ${JSON.stringify(before)}`);
  const uuid = before.metadata['table-uuid'];
  if (!uuid) fail('loaded table has no table-uuid');
  if (uuid !== created.metadata['table-uuid']) {
    fail(`table-uuid mismatch: create=${created.metadata['table-uuid']} load=${uuid}`);
  }
  const metadataLocationBefore = before['metadata-location'] ?? null;

  // 4. commit set-properties guarded by assert-table-uuid
  const commit = await catalog.commitTable(tableId, {
    identifier: tableId,
    requirements: [{ type: 'assert-table-uuid', uuid }],
    updates: [{ action: 'set-properties', updates: { writer: 'iceberg-js' } }],
  });
  if (commit.metadata?.properties?.writer !== 'iceberg-js') {
    fail(`commit response metadata lacks properties.writer: ${JSON.stringify(commit.metadata?.properties)}`);
  }

  // 5. load again and check
  const after = await catalog.loadTableResult(tableId);
  if (!after || !after.metadata) fail(`reload returned no metadata: ${JSON.stringify(after)}`);
  const property = after.metadata.properties?.writer;
  if (property !== 'iceberg-js') {
    fail(`property writer not set after reload: ${JSON.stringify(after.metadata.properties)}`);
  }
  if (after.metadata['table-uuid'] !== uuid) {
    fail(`table-uuid changed after commit: ${uuid} -> ${after.metadata['table-uuid']}`);
  }
  const metadataLocationAfter = after['metadata-location'] ?? null;
  if (metadataLocationAfter !== commit['metadata-location']) {
    fail(`reload metadata-location ${metadataLocationAfter} != commit response ${commit['metadata-location']}`);
  }

  process.stdout.write(
    JSON.stringify({
      table_uuid: uuid,
      metadata_location_before: metadataLocationBefore,
      metadata_location_after: metadataLocationAfter,
      property,
    }) + '\n',
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(describe(err) + '\n');
    process.exit(1);
  },
);
