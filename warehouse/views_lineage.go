package warehouse

// Lineage a view states. Iceberg view metadata has no standard field for the tables a view
// reads, and Tidemark parses no SQL: a view version whose summary (or, failing that, the view's
// properties) holds ViewInputsKey, a comma-separated list of the tables it reads named as in
// this warehouse (namespace.table), gets lineage from each of those tables that the catalog
// knows to the view. It is recorded as an OpenLineage event (type OTHER: no run completed, so no
// table counts as read) of the job iceberg-view:<view-uuid>, handed to the lineage service.

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/tables"
)

// ViewInputsKey names the tables a view version reads (in its summary or the view's properties).
const ViewInputsKey = "tidemark.lineage.inputs"

// maxViewInputs bounds the tables one view version may state.
const maxViewInputs = 100

// WithViewLineage hands the OpenLineage events of views' stated inputs to ingest
// (lineage.Service.Ingest); without it, no view lineage is recorded.
func WithViewLineage(ingest func(ctx context.Context, event []byte) error) Option {
	return func(s *Service) { s.viewIngest = ingest }
}

// viewInputs are the table names a view's current version states, trimmed, deduplicated.
func viewInputs(meta view.Metadata) []string {
	raw, ok := meta.CurrentVersion().Summary[ViewInputsKey]
	if !ok {
		raw = meta.Properties()[ViewInputsKey]
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range strings.Split(raw, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] || len(out) == maxViewInputs {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

type olDataset struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Facets    map[string]any `json:"facets,omitempty"`
}

// viewLineage records the lineage a view's current version states (best effort: the commit
// stands either way). Stated names the catalog does not know are skipped, not created.
func (s *Service) viewLineage(ctx context.Context, w tables.Warehouse, id TableIdent, meta view.Metadata) {
	if s.viewIngest == nil {
		return
	}
	var inputs []olDataset
	for _, n := range viewInputs(meta) {
		ref, ok, err := s.cat.Lookup(ctx, catalog.SpaceDataset, w.Namespace, n)
		if err != nil || !ok || ref.Deleted {
			s.log.Info("a view states an input table the catalog does not know; no lineage from it", "view", id.String(), "input", n)
			continue
		}
		inputs = append(inputs, olDataset{Namespace: w.Namespace, Name: n})
	}
	if len(inputs) == 0 {
		return
	}
	v := meta.CurrentVersion()
	const producer = "https://github.com/tidemark/tidemark/warehouse/views"
	ev := map[string]any{
		"eventType": "OTHER",
		"eventTime": time.UnixMilli(v.TimestampMS).UTC().Format(time.RFC3339Nano),
		"producer":  producer,
		"schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
		// One run a view version: a retried commit of the same version is the same event.
		"run":    map[string]any{"runId": uuid.NewSHA1(uuid.NameSpaceURL, []byte("iceberg-view:"+meta.ViewUUID().String()+":"+strconv.FormatInt(v.VersionID, 10))).String()},
		"job":    map[string]any{"namespace": "tidemark", "name": "iceberg-view:" + meta.ViewUUID().String()},
		"inputs": inputs,
		"outputs": []olDataset{{Namespace: w.Namespace, Name: id.String(), Facets: map[string]any{"datasetType": map[string]any{
			"_producer": producer, "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/DatasetTypeDatasetFacet.json", "datasetType": "VIEW"}}}},
	}
	b, err := json.Marshal(ev)
	if err == nil {
		err = s.viewIngest(context.WithoutCancel(ctx), b)
	}
	if err != nil {
		s.log.Warn("could not record a view's stated lineage", "view", id.String(), "err", err)
	}
}
