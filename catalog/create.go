package catalog

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"entgo.io/ent/dialect"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/externalid"
	"github.com/tidemark/tidemark/ent/idempotencykey"
	"github.com/tidemark/tidemark/ent/owner"

	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/internal/pgarray"
)

// CreateInput describes a new asset.
type CreateInput struct {
	Kind        Kind
	Namespace   string
	Name        string
	Description string
	ExternalIDs []ExternalIDInput
	Owners      []OwnerInput
	// IdempotencyKey, when set, makes retries of this create return the first result.
	IdempotencyKey string
}

// ExternalIDInput names an identity in another system.
type ExternalIDInput struct {
	System string `json:"system"`
	Value  string `json:"value"`
}

// OwnerInput names an owner; Kind defaults to user and Role to technical.
type OwnerInput struct {
	Principal string    `json:"principal"`
	Kind      OwnerKind `json:"kind"`
	Role      string    `json:"role"`
}

// MaxIdempotencyKeyBytes bounds Idempotency-Key values.
const MaxIdempotencyKeyBytes = 255

// checkIdempotencyKey refuses a key that is not printable UTF-8.
func checkIdempotencyKey(k string) error {
	if !utf8.ValidString(k) {
		return invalid("Idempotency-Key", "the Idempotency-Key must be printable UTF-8 (e.g. a UUID); it holds bytes that are not UTF-8")
	}
	for i, r := range k {
		if !unicode.IsPrint(r) {
			return invalid("Idempotency-Key", "the Idempotency-Key must be printable UTF-8 (e.g. a UUID); it holds %U at byte %d", r, i)
		}
	}
	return nil
}

// CreateResult says what Create did.
type CreateResult struct {
	Asset   Asset
	Created bool // false when an earlier create with the same key or external ID is returned
}

// Create registers a new asset under its first name. It is idempotent twice over: a repeated
// IdempotencyKey returns the asset the key first created (and refuses a different request under
// the same key), and an external ID that is already bound returns the asset it is bound to.
func (c *Catalog) Create(ctx context.Context, in CreateInput) (CreateResult, error) {
	if err := validateCreate(&in); err != nil {
		return CreateResult{}, err
	}
	hash := in.hash()
	var res CreateResult
	// A lost race on a unique index, or (with an Idempotency-Key) a name found taken by a
	// concurrent request that may carry the same key and committed between our two reads: the
	// next attempt sees the winner's rows, key included.
	raced := func(err error) bool {
		return ent.IsConstraintError(err) || (in.IdempotencyKey != "" && errors.Is(err, ErrNameTaken))
	}
	err := loop.Retry(ctx, maxAttempts, noWait, func(err error) bool {
		c.log.Debug("catalog: create raced, retrying", "err", err)
		return raced(err)
	}, func() error {
		var err error
		res, err = c.create(ctx, in, hash)
		if err == nil && res.Created {
			c.changed(ctx, nil, res.Asset.ID)
		}
		return err
	})
	if ent.IsConstraintError(err) {
		return CreateResult{}, &Error{Kind: ErrNameTaken, Field: "name",
			Message: fmt.Sprintf("name %s.%s is held by another asset", in.Namespace, in.Name)}
	}
	return res, err
}

func (c *Catalog) create(ctx context.Context, in CreateInput, hash string) (CreateResult, error) {
	var res CreateResult
	err := c.tx(ctx, func(tx *ent.Tx) error {
		if in.IdempotencyKey != "" {
			prior, err := tx.IdempotencyKey.Query().
				Where(idempotencykey.Operation(opCreateAsset), idempotencykey.Key(in.IdempotencyKey)).Only(ctx)
			switch {
			case err == nil:
				if prior.RequestHash != hash {
					return &Error{Kind: ErrConflict, Field: "Idempotency-Key", Message: fmt.Sprintf(
						"Idempotency-Key %q was first used for a different request (asset %s); use a new key for a new request",
						in.IdempotencyKey, prior.AssetID)}
				}
				a, err := load(ctx, tx.Client(), prior.AssetID)
				res = CreateResult{Asset: a}
				return err
			case !ent.IsNotFound(err):
				return fmt.Errorf("catalog: read idempotency key: %w", err)
			}
		}
		if id, ok, err := boundAsset(ctx, tx, in.ExternalIDs); err != nil {
			return err
		} else if ok {
			a, err := load(ctx, tx.Client(), id)
			res = CreateResult{Asset: a}
			return err
		}
		if holder, ok, err := currentHolder(ctx, tx.Client(), SpaceOf(in.Kind), in.Namespace, in.Name); err != nil {
			return err
		} else if ok {
			return &Error{Kind: ErrNameTaken, Field: "name", Message: fmt.Sprintf(
				"name %s.%s is held by asset %s; rename or delete that asset first, or pick another name", in.Namespace, in.Name, holder)}
		}

		now := c.Now()
		row, err := tx.Asset.Create().SetKind(asset.Kind(in.Kind)).SetDescription(in.Description).
			SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return fmt.Errorf("catalog: insert asset: %w", err)
		}
		if err := tx.AssetName.Create().SetAssetID(row.ID).SetSpace(assetname.Space(SpaceOf(in.Kind))).SetNamespace(in.Namespace).SetName(in.Name).
			SetValidFrom(now).Exec(ctx); err != nil {
			return fmt.Errorf("catalog: insert name: %w", err)
		}
		for _, x := range in.ExternalIDs {
			if err := tx.ExternalID.Create().SetAssetID(row.ID).SetSystem(x.System).SetValue(x.Value).
				SetCreatedAt(now).Exec(ctx); err != nil {
				return fmt.Errorf("catalog: insert external id: %w", err)
			}
		}
		for _, o := range in.Owners {
			if err := tx.Owner.Create().SetAssetID(row.ID).SetPrincipal(o.Principal).SetKind(owner.Kind(o.Kind)).
				SetRole(o.Role).SetAddedAt(now).Exec(ctx); err != nil {
				return fmt.Errorf("catalog: insert owner: %w", err)
			}
		}
		if in.IdempotencyKey != "" {
			if err := tx.IdempotencyKey.Create().SetOperation(opCreateAsset).SetKey(in.IdempotencyKey).
				SetRequestHash(hash).SetAssetID(row.ID).SetCreatedAt(now).Exec(ctx); err != nil {
				return fmt.Errorf("catalog: record idempotency key: %w", err)
			}
		}
		if err := c.reindex(ctx, tx.Client(), row.ID); err != nil {
			return err
		}
		a, err := load(ctx, tx.Client(), row.ID)
		if err != nil {
			return err
		}
		if err := c.audit(ctx, tx, now, ActionCreate, row.ID, nil, a); err != nil {
			return err
		}
		res = CreateResult{Asset: a, Created: true}
		return nil
	})
	return res, err
}

const opCreateAsset = "asset.create"

func validateCreate(in *CreateInput) error {
	if _, err := ParseKind(string(in.Kind)); err != nil {
		return err
	}
	if err := ValidateName(in.Namespace, in.Name); err != nil {
		return err
	}
	if err := validateDescription(in.Description); err != nil {
		return err
	}
	if len(in.IdempotencyKey) > MaxIdempotencyKeyBytes {
		return invalid("Idempotency-Key", "Idempotency-Key is %d bytes long; the limit is %d", len(in.IdempotencyKey), MaxIdempotencyKeyBytes)
	}
	// Stored as text: PostgreSQL refuses bytes that are not UTF-8 (and NUL), so they are refused
	// here, with a reason, rather than there, with a 500.
	if err := checkIdempotencyKey(in.IdempotencyKey); err != nil {
		return err
	}
	const maxItems = 100
	if len(in.ExternalIDs) > maxItems || len(in.Owners) > maxItems {
		return invalid("external_ids", "at most %d external IDs and %d owners per request", maxItems, maxItems)
	}
	seen := map[ExternalIDInput]bool{}
	for _, x := range in.ExternalIDs {
		if err := validateExternalID(x); err != nil {
			return err
		}
		if seen[x] {
			return invalid("external_ids", "external ID %s:%s is listed twice", x.System, x.Value)
		}
		seen[x] = true
	}
	principals := map[string]bool{}
	for i := range in.Owners {
		if err := validateOwner(&in.Owners[i]); err != nil {
			return err
		}
		if principals[in.Owners[i].Principal] {
			return invalid("owners", "owner %q is listed twice", in.Owners[i].Principal)
		}
		principals[in.Owners[i].Principal] = true
	}
	return nil
}

// hash fingerprints the request (everything but the key) to detect a key reused for another one.
func (in CreateInput) hash() string {
	in.IdempotencyKey = ""
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// boundAsset finds the asset any of ids is already bound to. Two IDs bound to different assets is
// a conflict: the request claims they are one asset, the catalog says two.
func boundAsset(ctx context.Context, tx *ent.Tx, ids []ExternalIDInput) (uuid.UUID, bool, error) {
	var found uuid.UUID
	for _, x := range ids {
		row, err := tx.ExternalID.Query().Where(externalid.System(x.System), externalid.Value(x.Value)).Only(ctx)
		if ent.IsNotFound(err) {
			continue
		}
		if err != nil {
			return uuid.Nil, false, fmt.Errorf("catalog: look up external id: %w", err)
		}
		if found != uuid.Nil && found != row.AssetID {
			return uuid.Nil, false, conflict("external IDs in this request are bound to two different assets (%s and %s)", found, row.AssetID)
		}
		found = row.AssetID
	}
	return found, found != uuid.Nil, nil
}

// MaxCreateMany bounds the assets CreateMany registers at once.
const MaxCreateMany = 1000

// CreateMany registers plain assets (kind, namespace, name, description: no idempotency key,
// external IDs or owners) with bulk statements, each with its audit event and search doc.
// Names already held are skipped, not refused: it is for ingest paths that register what they
// see. It returns how many assets it created.
func (c *Catalog) CreateMany(ctx context.Context, ins []CreateInput) (int, error) {
	return c.createManyOf(ctx, ins, false)
}

// CreateUnseen is CreateMany for names seen for the first time: it also skips a name some asset
// held before (a former name) and one bound to an asset as an OpenLineage symlink, which only
// their callers' own rules may resolve (to the asset that held or is bound to them).
func (c *Catalog) CreateUnseen(ctx context.Context, ins []CreateInput) (int, error) {
	return c.createManyOf(ctx, ins, true)
}

func (c *Catalog) createManyOf(ctx context.Context, ins []CreateInput, unseen bool) (int, error) {
	if len(ins) > MaxCreateMany {
		return 0, invalid("assets", "at most %d assets at once, not %d", MaxCreateMany, len(ins))
	}
	ins = slices.Clone(ins)
	for i := range ins {
		if ins[i].IdempotencyKey != "" || len(ins[i].ExternalIDs) > 0 || len(ins[i].Owners) > 0 {
			return 0, invalid("assets", "CreateMany takes plain assets; create %s.%s with Create", ins[i].Namespace, ins[i].Name)
		}
		if err := validateCreate(&ins[i]); err != nil {
			return 0, err
		}
	}
	// One insert order for every caller, so concurrent calls wait on each other instead of
	// deadlocking; the loser skips what the winner created.
	key := func(in CreateInput) string {
		return string(SpaceOf(in.Kind)) + "\x00" + in.Namespace + "\x00" + in.Name
	}
	ins = slices.Clone(ins) // sorted and compacted here: the caller's slice stays as it was
	slices.SortFunc(ins, func(a, b CreateInput) int { return cmp.Compare(key(a), key(b)) })
	ins = slices.CompactFunc(ins, func(a, b CreateInput) bool { return key(a) == key(b) })
	if len(ins) == 0 {
		return 0, nil
	}
	d, err := c.sqlDialect(ctx, c.client(ctx))
	if err != nil {
		return 0, err
	}
	if d == dialect.Postgres {
		created, err := c.createManyPG(ctx, ins, unseen)
		if err != nil {
			return 0, err
		}
		ids := make([]uuid.UUID, 0, len(created))
		for id := range created {
			ids = append(ids, id)
		}
		c.changed(ctx, created, ids...) // the hooks need not read back what was just written
		return len(created), nil
	}
	var created []uuid.UUID
	err = loop.Retry(ctx, 8, noWait, ent.IsConstraintError, func() error {
		var err error
		created, err = c.createMany(ctx, ins, unseen)
		return err
	})
	if ent.IsConstraintError(err) {
		// Still contended: one at a time, each Create finding the other creators' assets.
		created, err = nil, nil
		for _, in := range ins {
			res, cerr := c.Create(ctx, in)
			if cerr != nil && !errors.Is(cerr, ErrNameTaken) {
				return len(created), cerr
			}
			if cerr == nil && res.Created {
				created = append(created, res.Asset.ID)
			}
		}
		return len(created), nil
	}
	if err != nil {
		return 0, err
	}
	c.changed(ctx, nil, created...)
	return len(created), nil
}

// createManyPG writes the assets, their names, audit events and search docs (with their facets)
// in one statement: a round trip per call, whatever its size, and no transaction of its own. The
// names go in first, in key order, skipping (ON CONFLICT) those a concurrent creator holds; only
// the assets whose names went in are written. The name rows reference assets inserted later in
// the same statement, which PostgreSQL allows: foreign keys are checked at its end. ON CONFLICT
// names the current-name index: unnamed, every unique index of the table (the serial key, the
// asset's current name) is probed first, for new IDs that cannot conflict there.
func (c *Catalog) createManyPG(ctx context.Context, ins []CreateInput, unseen bool) (map[uuid.UUID]Summary, error) {
	now := c.Now()
	n := len(ins)
	var (
		ids, kinds, spaces, nss, names, descs, bodies, afters = make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		auditIDs, links                      = make([]string, n), make([]string, n)
		nameKeys, tNames, tFormers, tLabels  = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		facetAssets, facetNames, facetValues []string
	)
	for i, in := range ins {
		id := uuid.Must(uuid.NewV7())
		after, err := json.Marshal(Asset{ID: id, Kind: in.Kind, Status: StatusActive, Version: 1, Namespace: in.Namespace,
			Name: in.Name, Description: in.Description, CreatedAt: now, UpdatedAt: now, ExternalIDs: []ExternalID{}, Owners: []Owner{}})
		if err != nil {
			return nil, err
		}
		doc := buildDoc(&ent.Asset{ID: id, Kind: asset.Kind(in.Kind), Status: asset.StatusActive, Description: in.Description, Version: 1},
			[]*ent.AssetName{{AssetID: id, Namespace: in.Namespace, Name: in.Name}}, nil, nil, nil, nil)
		ids[i], kinds[i], spaces[i], nss[i], names[i], descs[i], bodies[i], afters[i] = id.String(), string(in.Kind),
			string(SpaceOf(in.Kind)), in.Namespace, in.Name, in.Description, doc.tBody, string(after)
		auditIDs[i] = uuid.Must(uuid.NewV7()).String()
		links[i] = SymlinkID(in.Namespace, in.Name).Value
		nameKeys[i], tNames[i], tFormers[i], tLabels[i] = doc.nameKey, doc.tName, doc.tFormer, doc.tLabels
		for _, f := range doc.facets {
			facetAssets, facetNames, facetValues = append(facetAssets, ids[i]), append(facetNames, f[0]), append(facetValues, f[1])
		}
	}
	cond := ""
	if unseen {
		// OFFSET 0 keeps each NOT EXISTS a probe of its index per row: as a join, the planner
		// hashed the whole names table when its statistics lagged behind a first ingest.
		cond = ` WHERE NOT EXISTS (SELECT 1 FROM asset_names h WHERE h.space = v.space AND h.namespace = v.namespace AND h.name = v.name OFFSET 0)
			AND NOT EXISTS (SELECT 1 FROM external_ids x WHERE x.system = $21 AND x.value = v.link OFFSET 0)`
	}
	q := `WITH v AS (
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::jsonb[],
			$9::uuid[], $10::text[], $11::text[], $12::text[], $13::text[], $20::text[]) WITH ORDINALITY
			AS v(id, kind, space, namespace, name, description, body, after, audit_id, link, name_key, t_name, t_former, t_labels, ord)
	), n AS (
		INSERT INTO asset_names (asset_id, space, namespace, name, valid_from)
		SELECT v.id, v.space, v.namespace, v.name, $14 FROM v` + cond + ` ORDER BY v.ord
		ON CONFLICT (space, namespace, name) WHERE valid_to IS NULL DO NOTHING RETURNING asset_id
	), a AS (
		INSERT INTO assets (id, kind, status, version, description, created_at, updated_at)
		SELECT v.id, v.kind, 'active', 1, v.description, $14, $14 FROM v JOIN n ON n.asset_id = v.id ORDER BY v.ord
	), e AS (
		INSERT INTO audit_events (id, at, actor, action, asset_id, after, request_id)
		SELECT v.audit_id, $14, $15, '` + ActionCreate + `', v.id, v.after, $16 FROM v JOIN n ON n.asset_id = v.id ORDER BY v.ord
	), d AS (
		INSERT INTO search_docs (asset_id, kind, status, namespace, name, name_key, t_name, t_former, t_labels, t_body, asset_version)
		SELECT v.id, v.kind, 'active', v.namespace, v.name, v.name_key, v.t_name, v.t_former, v.t_labels, v.body, 1
		FROM v JOIN n ON n.asset_id = v.id ORDER BY v.id
		RETURNING id, asset_id
	), f AS (
		INSERT INTO search_facets (doc_id, facet, value)
		SELECT d.id, f.facet, f.value FROM unnest($17::uuid[], $18::text[], $19::text[]) AS f(asset_id, facet, value)
		JOIN d ON d.asset_id = f.asset_id
	)
	SELECT asset_id FROM n`
	args := []any{pgarray.Text(ids), pgarray.Text(kinds), pgarray.Text(spaces), pgarray.Text(nss), pgarray.Text(names),
		pgarray.Text(descs), pgarray.Text(bodies), pgarray.Text(afters), pgarray.Text(auditIDs), pgarray.Text(links), pgarray.Text(nameKeys),
		pgarray.Text(tNames), pgarray.Text(tFormers), now, ActorFrom(ctx), requestIDFrom(ctx),
		pgarray.Text(facetAssets), pgarray.Text(facetNames), pgarray.Text(facetValues), pgarray.Text(tLabels)}
	if unseen {
		args = append(args, SystemSymlink)
	}
	rows, err := c.client(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: insert assets: %w", err)
	}
	defer rows.Close()
	at := make(map[string]int, n)
	for i, id := range ids {
		at[id] = i
	}
	created := map[uuid.UUID]Summary{}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("catalog: insert assets: %w", err)
		}
		in := ins[at[id.String()]]
		created[id] = Summary{ID: id, Kind: in.Kind, Status: StatusActive, Namespace: in.Namespace, Name: in.Name, CreatedAt: now, UpdatedAt: now}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: insert assets: %w", err)
	}
	return created, nil
}

func (c *Catalog) createMany(ctx context.Context, ins []CreateInput, unseen bool) ([]uuid.UUID, error) {
	var created []uuid.UUID
	err := c.tx(ctx, func(tx *ent.Tx) error {
		created = nil
		names := make([]string, len(ins))
		links := make([]string, len(ins))
		for i, in := range ins {
			names[i] = in.Name
			links[i] = SymlinkID(in.Namespace, in.Name).Value
		}
		held := map[string]bool{}
		q := tx.AssetName.Query().Where(assetname.NameIn(names...))
		if !unseen {
			q = q.Where(assetname.ValidToIsNil())
		}
		rows, err := q.All(ctx)
		if err != nil {
			return fmt.Errorf("catalog: look up names: %w", err)
		}
		for _, r := range rows {
			held[string(r.Space)+"\x00"+r.Namespace+"\x00"+r.Name] = true
		}
		bound := map[string]bool{}
		if unseen {
			vals, err := tx.ExternalID.Query().Where(externalid.System(SystemSymlink), externalid.ValueIn(links...)).
				Select(externalid.FieldValue).Strings(ctx)
			if err != nil {
				return fmt.Errorf("catalog: look up symlinks: %w", err)
			}
			for _, v := range vals {
				bound[v] = true
			}
		}
		now := c.Now()
		var (
			assets   []*ent.AssetCreate
			nameRows []*ent.AssetNameCreate
			audits   []*ent.AuditEventCreate
			// The rows as written, for their search docs.
			written      []*ent.Asset
			writtenNames []*ent.AssetName
		)
		for i, in := range ins {
			k := string(SpaceOf(in.Kind)) + "\x00" + in.Namespace + "\x00" + in.Name
			if held[k] || bound[links[i]] {
				continue
			}
			held[k] = true
			id := uuid.Must(uuid.NewV7())
			after, err := json.Marshal(Asset{ID: id, Kind: in.Kind, Status: StatusActive, Version: 1, Namespace: in.Namespace,
				Name: in.Name, Description: in.Description, CreatedAt: now, UpdatedAt: now, ExternalIDs: []ExternalID{}, Owners: []Owner{}})
			if err != nil {
				return err
			}
			assets = append(assets, tx.Asset.Create().SetID(id).SetKind(asset.Kind(in.Kind)).SetDescription(in.Description).
				SetCreatedAt(now).SetUpdatedAt(now))
			nameRows = append(nameRows, tx.AssetName.Create().SetAssetID(id).SetSpace(assetname.Space(SpaceOf(in.Kind))).
				SetNamespace(in.Namespace).SetName(in.Name).SetValidFrom(now))
			audits = append(audits, tx.AuditEvent.Create().SetAt(now).SetActor(ActorFrom(ctx)).SetAction(ActionCreate).
				SetAssetID(id).SetRequestID(requestIDFrom(ctx)).SetAfter(after))
			created = append(created, id)
			written = append(written, &ent.Asset{ID: id, Kind: asset.Kind(in.Kind), Status: asset.StatusActive, Description: in.Description, Version: 1})
			writtenNames = append(writtenNames, &ent.AssetName{AssetID: id, Namespace: in.Namespace, Name: in.Name})
		}
		if len(assets) == 0 {
			return nil
		}
		if err := tx.Asset.CreateBulk(assets...).Exec(ctx); err != nil {
			return fmt.Errorf("catalog: insert assets: %w", err)
		}
		if err := tx.AssetName.CreateBulk(nameRows...).Exec(ctx); err != nil {
			return fmt.Errorf("catalog: insert names: %w", err)
		}
		if err := tx.AuditEvent.CreateBulk(audits...).Exec(ctx); err != nil {
			return fmt.Errorf("catalog: audit creates: %w", err)
		}
		return c.indexCreated(ctx, tx.Client(), written, writtenNames)
	})
	return created, err
}

// IdempotencyWindow is how long an Idempotency-Key is remembered: long past any client's retries
// (which give up within minutes or hours), short enough that the table stays small.
const IdempotencyWindow = 7 * 24 * time.Hour

// PurgeIdempotencyKeys forgets keys older than the window; a request repeating one afterwards
// is a new request. It returns how many it forgot.
func (c *Catalog) PurgeIdempotencyKeys(ctx context.Context) (int, error) {
	n, err := c.db.IdempotencyKey.Delete().Where(idempotencykey.CreatedAtLT(c.Now().Add(-IdempotencyWindow))).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("catalog: purge idempotency keys: %w", err)
	}
	return n, nil
}

// noWait retries at once: the loser of a race on a unique index finds the winner's rows on its
// next read, with nothing to wait for.
func noWait(int) time.Duration { return 0 }
