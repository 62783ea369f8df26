package catalog

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/glossaryterm"
	"github.com/tidemark/tidemark/ent/label"
	"github.com/tidemark/tidemark/ent/searchdoc"
	"github.com/tidemark/tidemark/ent/searchfacet"
)

// The search index: one search_docs row per asset (deleted ones included, with status deleted),
// its text split into weighted fields of normalised tokens, and one search_facets row per facet
// value. Every change to an asset rebuilds its doc in the change's own transaction (reindex), so
// search never shows a name the asset no longer has, nor misses one it has.

// Facets search counts and filters by.
const (
	FacetKind      = "kind"
	FacetNamespace = "namespace"
	FacetTag       = "tag"
	FacetOwner     = "owner"
)

// Facets lists the facets in the order answers show them.
var Facets = []string{FacetKind, FacetNamespace, FacetTag, FacetOwner}

// facetStatus is a facet search filters by but does not count: the asset's status when it is
// not active, so that deleted (or, asked for, deprecated) docs are found through the facet index
// instead of the doc rows, which hold all of a doc's text. Active docs, nearly all of them, have
// none: a row each would add a third to the facet rows every create writes.
const facetStatus = "status"

// searchTokens splits s into lower-case tokens of letters and digits; everything else separates
// them, so "analytics.orders_daily" is analytics, orders, daily and "pii.email" is pii, email.
// Both the index and queries go through it, so both databases see the same tokens whatever their
// own tokenizers would have made of the punctuation.
func searchTokens(s string) []string {
	return appendTokens(nil, s)
}

func appendTokens(out []string, s string) []string {
	start := -1
	for i, r := range s {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			out = append(out, strings.ToLower(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(s[start:]))
	}
	return out
}

// tokenText is the tokens of every s, space-separated: the form the text fields are stored in.
func tokenText(ss ...string) string {
	var toks []string
	for _, s := range ss {
		toks = appendTokens(toks, s)
	}
	return strings.Join(toks, " ")
}

// reindexChunk bounds the assets one round of reindex reads and writes: 500 assets are 5,500
// parameters in the doc upsert, well under SQLite's 32,766 and PostgreSQL's 65,535.
const reindexChunk = 500

// reindex rebuilds the search docs and facets of ids from what the database holds now, through
// client (a transaction's, so the docs change with the change that moved them). It reads each
// table once per chunk of assets with IN queries, never once per asset. IDs of assets that do not
// exist are skipped.
func (c *Catalog) reindex(ctx context.Context, client *ent.Client, ids ...uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	d, err := c.sqlDialect(ctx, client)
	if err != nil {
		return err
	}
	for part := range slices.Chunk(uniqueIDs(ids), reindexChunk) {
		if err := reindexPart(ctx, client, d, part); err != nil {
			return err
		}
	}
	return nil
}

// searchDoc is a doc as reindex builds it, or as it finds it.
type searchDoc struct {
	id                             int // 0 until it is written
	assetID                        uuid.UUID
	kind, status, namespace, name  string
	nameKey                        string
	tName, tFormer, tLabels, tBody string
	version                        int64
	facets                         [][2]string // facet, value
}

// sameRow reports whether a and b hold the same searchable values (their IDs, facets and asset
// versions aside): every change bumps the version, and rewriting a doc for it alone would
// rewrite its full-text entry for nothing.
func (a searchDoc) sameRow(b searchDoc) bool {
	return a.assetID == b.assetID && a.kind == b.kind && a.status == b.status && a.namespace == b.namespace && a.name == b.name &&
		a.nameKey == b.nameKey && a.tName == b.tName && a.tFormer == b.tFormer && a.tLabels == b.tLabels && a.tBody == b.tBody
}

func sameFacets(a, b [][2]string) bool {
	if len(a) != len(b) {
		return false
	}
	order := func(x, y [2]string) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) }
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, order)
	slices.SortFunc(b, order)
	return slices.Equal(a, b)
}

// indexSources are the branches of reindex's one read, each a table it builds docs from (or the
// docs and facets as they are), every value as text so that one UNION ALL carries them all: one
// round trip per chunk of assets instead of one per table (a third of a millisecond each on
// PostgreSQL, paid by every change to an asset).
var indexSources = []struct{ src, cols, from, where string }{
	{"a", "CAST(id AS TEXT), kind, status, description, CAST(version AS TEXT)", "assets", "id"},
	{"n", "CAST(asset_id AS TEXT), CAST(id AS TEXT), namespace, name, CASE WHEN valid_to IS NULL THEN 'current' ELSE '' END", "asset_names", "asset_id"},
	{"o", "CAST(asset_id AS TEXT), principal", "owners", "removed_at IS NULL AND asset_id"},
	{"c", "CAST(asset_id AS TEXT), CAST(id AS TEXT), CAST(ordinal AS TEXT), path, source_doc, description", "columns", "removed_at IS NULL AND asset_id"},
	{"l", "CAST(asset_id AS TEXT), CAST(column_id AS TEXT), kind, value", "labels", "removed_at IS NULL AND asset_id"},
	{"d", "CAST(asset_id AS TEXT), CAST(id AS TEXT), kind, status, namespace, name, name_key, t_name, t_former, t_labels, t_body, CAST(asset_version AS TEXT)",
		"search_docs", "asset_id"},
	{"f", "CAST(d.asset_id AS TEXT), f.facet, f.value", "search_facets f JOIN search_docs d ON d.id = f.doc_id", "d.asset_id"},
}

// indexWidth is the widest branch's value count; narrower ones are padded with NULLs.
const indexWidth = 12

func reindexPart(ctx context.Context, client *ent.Client, d string, ids []uuid.UUID) error {
	q, args := reindexQuery(d, ids)
	rows, err := client.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("catalog: index: read assets: %w", err)
	}
	var (
		assets    []*ent.Asset
		names     = map[uuid.UUID][]*ent.AssetName{}
		owners    = map[uuid.UUID][]string{}
		cols      = map[uuid.UUID][]*ent.Column{}
		labels    []*ent.Label
		existing  = map[uuid.UUID]*searchDoc{}
		facetRows [][3]string
		termIDs   []uuid.UUID
	)
	defer rows.Close()
	for rows.Next() {
		var src string
		var v [indexWidth]sql.NullString
		ptrs := []any{&src}
		for i := range v {
			ptrs = append(ptrs, &v[i])
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("catalog: index: read assets: %w", err)
		}
		assetID, err := uuid.Parse(v[0].String)
		if err != nil {
			return fmt.Errorf("catalog: index: read assets: asset id %q: %w", v[0].String, err)
		}
		num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
		switch src {
		case "a":
			assets = append(assets, &ent.Asset{ID: assetID, Kind: asset.Kind(v[1].String), Status: asset.Status(v[2].String),
				Description: v[3].String, Version: num(v[4].String)})
		case "n":
			n := &ent.AssetName{ID: int(num(v[1].String)), AssetID: assetID, Namespace: v[2].String, Name: v[3].String}
			if v[4].String == "" {
				n.ValidTo = &time.Time{} // closed; when does not matter here
			}
			names[assetID] = append(names[assetID], n)
		case "o":
			owners[assetID] = append(owners[assetID], v[1].String)
		case "c":
			id, _ := uuid.Parse(v[1].String)
			cols[assetID] = append(cols[assetID], &ent.Column{ID: id, AssetID: assetID, Ordinal: int(num(v[2].String)), Path: v[3].String,
				SourceDoc: v[4].String, Description: v[5].String})
		case "l":
			col, _ := uuid.Parse(v[1].String)
			l := &ent.Label{AssetID: assetID, ColumnID: col, Kind: label.Kind(v[2].String), Value: v[3].String}
			labels = append(labels, l)
			if l.Kind == label.KindTerm {
				if id, err := uuid.Parse(l.Value); err == nil {
					termIDs = append(termIDs, id)
				}
			}
		case "d":
			existing[assetID] = &searchDoc{id: int(num(v[1].String)), assetID: assetID, kind: v[2].String, status: v[3].String,
				namespace: v[4].String, name: v[5].String, nameKey: v[6].String, tName: v[7].String, tFormer: v[8].String,
				tLabels: v[9].String, tBody: v[10].String, version: num(v[11].String)}
		case "f":
			facetRows = append(facetRows, [3]string{v[0].String, v[1].String, v[2].String})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("catalog: index: read assets: %w", err)
	}
	rows.Close()
	if len(assets) == 0 {
		return nil
	}
	for _, f := range facetRows {
		id, _ := uuid.Parse(f[0])
		if doc := existing[id]; doc != nil {
			doc.facets = append(doc.facets, [2]string{f[1], f[2]})
		}
	}
	termNames, err := termNamesOf(ctx, client, termIDs)
	if err != nil {
		return err
	}
	labelsOf := orderForDocs(names, owners, cols, labels)

	var write, refacet []searchDoc
	for _, a := range assets {
		doc := buildDoc(a, names[a.ID], owners[a.ID], cols[a.ID], labelsOf[a.ID], termNames)
		old := existing[a.ID]
		if old != nil {
			doc.id = old.id
		}
		if old == nil || !doc.sameRow(*old) {
			write = append(write, doc)
		}
		if old == nil || !sameFacets(doc.facets, old.facets) {
			refacet = append(refacet, doc)
		}
	}
	return writeDocs(ctx, client, d, write, refacet)
}

// reindexQuery reads everything the docs of ids are built from, in one statement: a UNION ALL
// of the index sources, each row tagged with its source and padded to indexWidth columns.
func reindexQuery(d string, ids []uuid.UUID) (string, []any) {
	a := newSQLArgs(d)
	var b strings.Builder
	for i, src := range indexSources {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		b.WriteString("SELECT '" + src.src + "', " + src.cols)
		for range indexWidth - strings.Count(src.cols, ",") - 1 {
			b.WriteString(", NULL")
		}
		b.WriteString(" FROM " + src.from + " WHERE " + src.where + " IN (")
		for j, id := range ids {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.add(id))
		}
		b.WriteString(")")
	}
	return b.String(), a.args
}

// termNamesOf reads the names of the glossary terms labels link to, by term ID.
func termNamesOf(ctx context.Context, client *ent.Client, termIDs []uuid.UUID) (map[string]string, error) {
	termNames := map[string]string{}
	if len(termIDs) == 0 {
		return termNames, nil
	}
	slices.SortFunc(termIDs, compareIDs)
	for part := range slices.Chunk(slices.Compact(termIDs), reindexChunk) {
		terms, err := client.GlossaryTerm.Query().Where(glossaryterm.IDIn(part...)).
			Select(glossaryterm.FieldName).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: index: read glossary terms: %w", err)
		}
		for _, t := range terms {
			termNames[t.ID.String()] = t.Name
		}
	}
	return termNames, nil
}

// orderForDocs sorts what was read into the orders buildDoc expects (names oldest first, owners
// and labels by value, columns by position) and returns each asset's labels that count: its
// own and those of its current columns.
func orderForDocs(names map[uuid.UUID][]*ent.AssetName, owners map[uuid.UUID][]string, cols map[uuid.UUID][]*ent.Column,
	labels []*ent.Label) map[uuid.UUID][]*ent.Label {
	current := map[uuid.UUID]bool{uuid.Nil: true} // columns whose labels count, and the asset itself
	for id := range names {
		slices.SortFunc(names[id], func(x, y *ent.AssetName) int { return cmp.Compare(x.ID, y.ID) })
	}
	for id := range owners {
		slices.Sort(owners[id])
	}
	for id := range cols {
		slices.SortFunc(cols[id], func(x, y *ent.Column) int {
			return cmp.Or(cmp.Compare(x.Ordinal, y.Ordinal), cmp.Compare(x.Path, y.Path))
		})
		for _, col := range cols[id] {
			current[col.ID] = true
		}
	}
	slices.SortFunc(labels, func(x, y *ent.Label) int { return cmp.Compare(x.Value, y.Value) })
	labelsOf := map[uuid.UUID][]*ent.Label{}
	for _, l := range labels {
		if current[l.ColumnID] {
			labelsOf[l.AssetID] = append(labelsOf[l.AssetID], l)
		}
	}
	return labelsOf
}

// writeDocs writes the docs in write and replaces the facets of those in refacet (a doc
// without an id is new: it has none to clear).
func writeDocs(ctx context.Context, client *ent.Client, d string, write, refacet []searchDoc) error {
	// One write order for every caller, so concurrent reindexes wait on each other, never deadlock.
	byAsset := func(a, b searchDoc) int { return compareIDs(a.assetID, b.assetID) }
	slices.SortFunc(write, byAsset)
	slices.SortFunc(refacet, byAsset)
	var clear []int // docs that had facets before
	for _, doc := range refacet {
		if doc.id != 0 {
			clear = append(clear, doc.id)
		}
	}
	if len(write) > 0 {
		ids, err := upsertDocs(ctx, client, d, write)
		if err != nil {
			return err
		}
		for i := range refacet {
			if id, ok := ids[refacet[i].assetID]; ok {
				refacet[i].id = id
			}
		}
	}
	if len(refacet) > 0 {
		return replaceFacets(ctx, client, d, clear, refacet)
	}
	return nil
}

// indexCreated writes the docs of assets created in this transaction with a name and nothing
// else (CreateMany's): the doc is built as reindex builds it, from the rows as written, without
// reading back what is known to be empty (owners, columns, labels, an older doc). Lineage ingest
// creates assets in batches of up to 1,000 this way; reading them back cost as much as writing.
func (c *Catalog) indexCreated(ctx context.Context, client *ent.Client, assets []*ent.Asset, names []*ent.AssetName) error {
	if len(assets) == 0 {
		return nil
	}
	d, err := c.sqlDialect(ctx, client)
	if err != nil {
		return err
	}
	docs := make([]searchDoc, len(assets))
	for i, a := range assets {
		docs[i] = buildDoc(a, names[i:i+1], nil, nil, nil, nil)
	}
	for part := range slices.Chunk(docs, reindexChunk) {
		if err := writeDocs(ctx, client, d, part, part); err != nil {
			return err
		}
	}
	return nil
}

// buildDoc makes the doc of one asset. names are its name rows, oldest first: the current one (or,
// once deleted, the last it held) is the name; the others are former names.
func buildDoc(a *ent.Asset, names []*ent.AssetName, owners []string, cols []*ent.Column, labels []*ent.Label, termNames map[string]string) searchDoc {
	d := searchDoc{assetID: a.ID, kind: string(a.Kind), status: string(a.Status), version: a.Version}
	latest := -1
	for i, n := range names {
		if n.ValidTo == nil {
			latest = i
		}
	}
	if latest < 0 {
		latest = len(names) - 1 // deleted: the last name it held
	}
	if latest >= 0 {
		d.namespace, d.name = names[latest].Namespace, names[latest].Name
	}
	d.nameKey = tokenText(d.name)
	d.tName = tokenText(d.namespace, d.name)
	var former []string
	seen := map[[2]string]bool{{d.namespace, d.name}: true}
	for i := len(names) - 1; i >= 0; i-- { // newest first
		k := [2]string{names[i].Namespace, names[i].Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		former = append(former, names[i].Namespace, names[i].Name)
	}
	d.tFormer = tokenText(former...)

	facets := map[[2]string]bool{}
	addFacet := func(f, v string) {
		if v != "" && !facets[[2]string{f, v}] {
			facets[[2]string{f, v}] = true
			d.facets = append(d.facets, [2]string{f, v})
		}
	}
	addFacet(FacetKind, d.kind)
	addFacet(FacetNamespace, d.namespace)
	if a.Status != asset.StatusActive {
		addFacet(facetStatus, d.status)
	}
	var labelText []string
	for _, l := range labels {
		switch l.Kind {
		case label.KindTag:
			labelText = append(labelText, l.Value)
			addFacet(FacetTag, l.Value)
		case label.KindTerm:
			if id, err := uuid.Parse(l.Value); err == nil && termNames[id.String()] != "" {
				name := termNames[id.String()]
				labelText = append(labelText, name)
			}
		}
	}
	for _, o := range owners {
		labelText = append(labelText, o)
		addFacet(FacetOwner, o)
	}
	d.tLabels = tokenText(labelText...)

	body := []string{a.Description}
	for _, col := range cols {
		body = append(body, col.Path, col.SourceDoc, col.Description)
	}
	d.tBody = tokenText(body...)
	return d
}

var docColumns = []string{searchdoc.FieldAssetID, searchdoc.FieldKind, searchdoc.FieldStatus, searchdoc.FieldNamespace,
	searchdoc.FieldName, searchdoc.FieldNameKey, searchdoc.FieldTName, searchdoc.FieldTFormer, searchdoc.FieldTLabels,
	searchdoc.FieldTBody, searchdoc.FieldAssetVersion}

// upsertDocs writes docs with one statement, keeping each existing doc's integer ID (the FTS5
// rowid), and returns the doc IDs by asset. The statement is the same on both databases but for
// its placeholders.
func upsertDocs(ctx context.Context, client *ent.Client, d string, docs []searchDoc) (map[uuid.UUID]int, error) {
	var b strings.Builder
	a := newSQLArgs(d)
	a.args = make([]any, 0, len(docs)*len(docColumns))
	b.WriteString("INSERT INTO " + searchdoc.Table + " (" + strings.Join(docColumns, ", ") + ") VALUES ")
	for i, doc := range docs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, v := range []any{doc.assetID, doc.kind, doc.status, doc.namespace, doc.name, doc.nameKey, doc.tName, doc.tFormer, doc.tLabels, doc.tBody, doc.version} {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.add(v))
		}
		b.WriteByte(')')
	}
	b.WriteString(" ON CONFLICT (" + searchdoc.FieldAssetID + ") DO UPDATE SET ")
	for i, col := range docColumns[1:] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(col + " = excluded." + col)
	}
	b.WriteString(" RETURNING " + searchdoc.FieldID + ", " + searchdoc.FieldAssetID)
	rows, err := client.QueryContext(ctx, b.String(), a.args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: index: write docs: %w", err)
	}
	defer rows.Close()
	out := make(map[uuid.UUID]int, len(docs))
	for rows.Next() {
		var id int
		var assetID uuid.UUID
		if err := rows.Scan(&id, &assetID); err != nil {
			return nil, fmt.Errorf("catalog: index: read doc ids: %w", err)
		}
		out[assetID] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: index: write docs: %w", err)
	}
	return out, nil
}

// facetChunk bounds the facet rows per insert (3 parameters each).
const facetChunk = 2000

// replaceFacets deletes the facet rows of the docs clear and writes those of docs. A row that
// is there already (a concurrent reindex of the same asset wrote it) is left as it is.
func replaceFacets(ctx context.Context, client *ent.Client, d string, clear []int, docs []searchDoc) error {
	if len(clear) > 0 {
		if _, err := client.SearchFacet.Delete().Where(searchfacet.DocIDIn(clear...)).Exec(ctx); err != nil {
			return fmt.Errorf("catalog: index: clear facets: %w", err)
		}
	}
	type row struct {
		doc          int
		facet, value string
	}
	var rows []row
	for _, doc := range docs {
		if doc.id == 0 {
			return fmt.Errorf("catalog: index: no doc id came back for asset %s", doc.assetID)
		}
		for _, f := range doc.facets {
			rows = append(rows, row{doc.id, f[0], f[1]})
		}
	}
	for part := range slices.Chunk(rows, facetChunk) {
		var b strings.Builder
		a := newSQLArgs(d)
		b.WriteString("INSERT INTO " + searchfacet.Table + " (" + searchfacet.FieldDocID + ", " + searchfacet.FieldFacet + ", " + searchfacet.FieldValue + ") VALUES ")
		for i, r := range part {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(" + a.add(r.doc) + ", " + a.add(r.facet) + ", " + a.add(r.value) + ")")
		}
		b.WriteString(" ON CONFLICT (" + searchfacet.FieldDocID + ", " + searchfacet.FieldFacet + ", " + searchfacet.FieldValue + ") DO NOTHING") // the serial key cannot conflict
		if _, err := client.ExecContext(ctx, b.String(), a.args...); err != nil {
			return fmt.Errorf("catalog: index: write facets: %w", err)
		}
	}
	return nil
}

// indexBatch is how many assets IndexMissing indexes per transaction.
const indexBatch = 1000

// IndexMissing indexes, in batches of 1,000 in ID order, each in its own transaction, the assets
// that have no search doc (databases from before search, or docs removed by hand), and returns
// how many it indexed. progress, when set, is called after each batch with the running total.
// It stops when ctx ends; what it indexed by then stays indexed, and the next call goes on.
// Replicas that run it together on PostgreSQL take turns per batch, so each asset is indexed once.
func (c *Catalog) IndexMissing(ctx context.Context, progress func(done int)) (int, error) {
	done := 0
	after := uuid.Nil
	noDoc := func(s *entsql.Selector) {
		t := entsql.Table(searchdoc.Table)
		s.Where(entsql.NotExists(entsql.Select(t.C(searchdoc.FieldID)).From(t).
			Where(entsql.ColumnsEQ(t.C(searchdoc.FieldAssetID), s.C(asset.FieldID)))))
	}
	for {
		if err := ctx.Err(); err != nil {
			return done, err
		}
		var ids []uuid.UUID
		err := c.tx(ctx, func(tx *ent.Tx) error {
			// Replicas starting together take turns batch by batch (the lock is held until the
			// batch commits, and the next batch is chosen under it), so none indexes an asset
			// another is indexing: the work is done once however many replicas start.
			d, err := c.sqlDialect(ctx, tx.Client())
			if err != nil {
				return err
			}
			if d == dialect.Postgres {
				if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", indexMissingLock); err != nil {
					return fmt.Errorf("catalog: wait for other replicas' indexing: %w", err)
				}
			}
			ids, err = tx.Asset.Query().Where(asset.IDGT(after), noDoc).Order(ent.Asc(asset.FieldID)).Limit(indexBatch).IDs(ctx)
			if err != nil {
				return fmt.Errorf("catalog: find assets to index: %w", err)
			}
			if len(ids) == 0 {
				return nil
			}
			return c.reindex(ctx, tx.Client(), ids...)
		})
		if err != nil {
			return done, err
		}
		if len(ids) == 0 {
			return done, nil
		}
		done += len(ids)
		after = ids[len(ids)-1]
		if progress != nil {
			progress(done)
		}
	}
}

// indexMissingLock is the PostgreSQL advisory lock key IndexMissing's batches take ("tdsx").
const indexMissingLock = 0x74647378

// compareIDs orders UUIDs as the databases do (bytewise, which is also their string order).
func compareIDs(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }
