package catalog

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/column"
	"github.com/tidemark/tidemark/ent/glossaryterm"
	"github.com/tidemark/tidemark/ent/label"
	"github.com/tidemark/tidemark/ent/owner"
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
	ids = slices.Clone(ids)
	slices.SortFunc(ids, compareIDs)
	ids = slices.Compact(ids)
	for part := range slices.Chunk(ids, reindexChunk) {
		if err := reindexPart(ctx, client, part); err != nil {
			return err
		}
	}
	return nil
}

// searchDoc is a doc as reindex builds it.
type searchDoc struct {
	assetID                        uuid.UUID
	kind, status, namespace, name  string
	nameKey                        string
	tName, tFormer, tLabels, tBody string
	version                        int64
	facets                         [][2]string // facet, value
}

func reindexPart(ctx context.Context, client *ent.Client, ids []uuid.UUID) error {
	assets, err := client.Asset.Query().Where(asset.IDIn(ids...)).
		Select(asset.FieldKind, asset.FieldStatus, asset.FieldDescription, asset.FieldVersion).All(ctx)
	if err != nil {
		return fmt.Errorf("catalog: index: read assets: %w", err)
	}
	if len(assets) == 0 {
		return nil
	}
	names, err := client.AssetName.Query().Where(assetname.AssetIDIn(ids...)).
		Select(assetname.FieldAssetID, assetname.FieldNamespace, assetname.FieldName, assetname.FieldValidTo).
		Order(ent.Asc(assetname.FieldID)).All(ctx)
	if err != nil {
		return fmt.Errorf("catalog: index: read names: %w", err)
	}
	owners, err := client.Owner.Query().Where(owner.AssetIDIn(ids...), owner.RemovedAtIsNil()).
		Select(owner.FieldAssetID, owner.FieldPrincipal).Order(ent.Asc(owner.FieldPrincipal)).All(ctx)
	if err != nil {
		return fmt.Errorf("catalog: index: read owners: %w", err)
	}
	cols, err := client.Column.Query().Where(column.AssetIDIn(ids...), column.RemovedAtIsNil()).
		Select(column.FieldAssetID, column.FieldPath, column.FieldSourceDoc, column.FieldDescription).
		Order(ent.Asc(column.FieldOrdinal), ent.Asc(column.FieldPath)).All(ctx)
	if err != nil {
		return fmt.Errorf("catalog: index: read columns: %w", err)
	}
	labels, err := client.Label.Query().Where(label.AssetIDIn(ids...), label.RemovedAtIsNil()).
		Select(label.FieldAssetID, label.FieldColumnID, label.FieldKind, label.FieldValue).
		Order(ent.Asc(label.FieldValue)).All(ctx)
	if err != nil {
		return fmt.Errorf("catalog: index: read labels: %w", err)
	}
	var termIDs []uuid.UUID
	for _, l := range labels {
		if l.Kind == label.KindTerm {
			if id, err := uuid.Parse(l.Value); err == nil {
				termIDs = append(termIDs, id)
			}
		}
	}
	termNames := map[string]string{}
	if len(termIDs) > 0 {
		slices.SortFunc(termIDs, compareIDs)
		for part := range slices.Chunk(slices.Compact(termIDs), reindexChunk) {
			terms, err := client.GlossaryTerm.Query().Where(glossaryterm.IDIn(part...)).
				Select(glossaryterm.FieldName).All(ctx)
			if err != nil {
				return fmt.Errorf("catalog: index: read glossary terms: %w", err)
			}
			for _, t := range terms {
				termNames[t.ID.String()] = t.Name
			}
		}
	}

	namesOf := map[uuid.UUID][]*ent.AssetName{}
	for _, n := range names {
		namesOf[n.AssetID] = append(namesOf[n.AssetID], n)
	}
	ownersOf := map[uuid.UUID][]string{}
	for _, o := range owners {
		ownersOf[o.AssetID] = append(ownersOf[o.AssetID], o.Principal)
	}
	colsOf := map[uuid.UUID][]*ent.Column{}
	current := map[uuid.UUID]bool{uuid.Nil: true} // columns whose labels count, and the asset itself
	for _, col := range cols {
		colsOf[col.AssetID] = append(colsOf[col.AssetID], col)
		current[col.ID] = true
	}
	labelsOf := map[uuid.UUID][]*ent.Label{}
	for _, l := range labels {
		if current[l.ColumnID] {
			labelsOf[l.AssetID] = append(labelsOf[l.AssetID], l)
		}
	}

	docs := make([]searchDoc, 0, len(assets))
	for _, a := range assets {
		docs = append(docs, buildDoc(a, namesOf[a.ID], ownersOf[a.ID], colsOf[a.ID], labelsOf[a.ID], termNames))
	}
	// One write order for every caller, so concurrent reindexes wait on each other, never deadlock.
	slices.SortFunc(docs, func(a, b searchDoc) int { return compareIDs(a.assetID, b.assetID) })
	docIDs, err := upsertDocs(ctx, client, docs)
	if err != nil {
		return err
	}
	return replaceFacets(ctx, client, docs, docIDs)
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
// rowid), and returns the doc IDs by asset. The statement is the same on both databases; "$n"
// placeholders are positional on SQLite too.
func upsertDocs(ctx context.Context, client *ent.Client, docs []searchDoc) (map[uuid.UUID]int, error) {
	var b strings.Builder
	args := make([]any, 0, len(docs)*len(docColumns))
	b.WriteString("INSERT INTO " + searchdoc.Table + " (" + strings.Join(docColumns, ", ") + ") VALUES ")
	for i, d := range docs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, v := range []any{d.assetID, d.kind, d.status, d.namespace, d.name, d.nameKey, d.tName, d.tFormer, d.tLabels, d.tBody, d.version} {
			if j > 0 {
				b.WriteString(", ")
			}
			args = append(args, v)
			b.WriteString("$" + strconv.Itoa(len(args)))
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
	rows, err := client.QueryContext(ctx, b.String(), args...)
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

// replaceFacets replaces the facet rows of docs with the ones they have now.
func replaceFacets(ctx context.Context, client *ent.Client, docs []searchDoc, docIDs map[uuid.UUID]int) error {
	ids := make([]int, 0, len(docs))
	type row struct {
		doc          int
		facet, value string
	}
	var rows []row
	for _, d := range docs {
		id, ok := docIDs[d.assetID]
		if !ok {
			return fmt.Errorf("catalog: index: no doc id came back for asset %s", d.assetID)
		}
		ids = append(ids, id)
		for _, f := range d.facets {
			rows = append(rows, row{id, f[0], f[1]})
		}
	}
	if _, err := client.SearchFacet.Delete().Where(searchfacet.DocIDIn(ids...)).Exec(ctx); err != nil {
		return fmt.Errorf("catalog: index: clear facets: %w", err)
	}
	for part := range slices.Chunk(rows, facetChunk) {
		var b strings.Builder
		args := make([]any, 0, 3*len(part))
		b.WriteString("INSERT INTO " + searchfacet.Table + " (" + searchfacet.FieldDocID + ", " + searchfacet.FieldFacet + ", " + searchfacet.FieldValue + ") VALUES ")
		for i, r := range part {
			if i > 0 {
				b.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&b, "($%d, $%d, $%d)", n+1, n+2, n+3)
			args = append(args, r.doc, r.facet, r.value)
		}
		if _, err := client.ExecContext(ctx, b.String(), args...); err != nil {
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
		ids, err := c.client(ctx).Asset.Query().Where(asset.IDGT(after), noDoc).
			Order(ent.Asc(asset.FieldID)).Limit(indexBatch).IDs(ctx)
		if err != nil {
			return done, fmt.Errorf("catalog: find assets to index: %w", err)
		}
		if len(ids) == 0 {
			return done, nil
		}
		if err := c.tx(ctx, func(tx *ent.Tx) error { return c.reindex(ctx, tx.Client(), ids...) }); err != nil {
			return done, err
		}
		done += len(ids)
		after = ids[len(ids)-1]
		if progress != nil {
			progress(done)
		}
	}
}

// compareIDs orders UUIDs as the databases do (bytewise, which is also their string order).
func compareIDs(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }
