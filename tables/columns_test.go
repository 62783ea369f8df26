package tables_test

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/column"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// peopleSchema has a struct, a list and a map, to show how nested fields are named. (Creating
// the table assigns field IDs in this order anyway.)
var peopleSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "Person key"},
	iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "address", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 4, Name: "city", Type: iceberg.PrimitiveTypes.String},
		{ID: 5, Name: "zip", Type: iceberg.PrimitiveTypes.String},
	}}},
	iceberg.NestedField{ID: 6, Name: "phones", Type: &iceberg.ListType{ElementID: 7, Element: iceberg.PrimitiveTypes.String}},
	iceberg.NestedField{ID: 8, Name: "attrs", Type: &iceberg.MapType{KeyID: 9, KeyType: iceberg.PrimitiveTypes.String,
		ValueID: 10, ValueType: iceberg.DecimalTypeOf(10, 2)}},
)

type col struct {
	path, typ string
	id        int
}

func currentColumns(t *testing.T, cat *catalog.Catalog, id uuid.UUID) ([]col, map[string]catalog.Column) {
	t.Helper()
	cols, err := cat.Columns(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []col
	byPath := map[string]catalog.Column{}
	for _, c := range cols {
		if c.FieldID == nil {
			t.Fatalf("column %s has no field ID", c.Path)
		}
		out = append(out, col{c.Path, c.Type, *c.FieldID})
		byPath[c.Path] = c
	}
	return out, byPath
}

// TestColumnsFollowIcebergSchema: a synced table's columns carry their field IDs; a column
// renamed in Iceberg keeps its record, a person's description and its tags, and the rename is in
// the schema history; refreshes without a schema change record nothing.
func TestColumnsFollowIcebergSchema(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		c := &clock{t: t0}
		svc, cat := newService(t, db, c, tables.WithConnections(connection(l)))
		if err := cat.EnsureClassifications(ctx); err != nil {
			t.Fatal(err)
		}
		tbl, err := l.Cat.CreateTable(ctx, table.Identifier{"db", "people"}, peopleSchema)
		if err != nil {
			t.Fatal(err)
		}
		sync(t, svc)
		id := mustResolve(t, cat, tbl).ID
		got, cols := currentColumns(t, cat, id)
		want := []col{{"id", "long", 1}, {"email", "string", 2}, {"address", "struct", 3}, {"address.city", "string", 4},
			{"address.zip", "string", 5}, {"phones", "list", 6}, {"phones.element", "string", 7}, {"attrs", "map", 8},
			{"attrs.key", "string", 9}, {"attrs.value", "decimal(10, 2)", 10}}
		if !slices.Equal(got, want) {
			t.Fatalf("columns\n%v\nwant\n%v", got, want)
		}
		if cols["id"].SourceDoc != "Person key" {
			t.Errorf("id's doc: %q", cols["id"].SourceDoc)
		}
		email := cols["email"]
		if _, err := cat.SetColumnDescription(ctx, id, catalog.AnyVersion, email.ID, "Where receipts go."); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.AddLabel(ctx, id, catalog.AnyVersion, catalog.LabelInput{ColumnID: email.ID, Kind: catalog.LabelTag, Value: "pii.email"}); err != nil {
			t.Fatal(err)
		}

		// A refresh of the same schema records nothing: the asset keeps its version.
		before, err := cat.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Refresh(ctx, id); err != nil {
			t.Fatal(err)
		}
		if after, _ := cat.Get(ctx, id); after.Version != before.Version {
			t.Fatalf("a refresh without a schema change moved the asset from version %d to %d", before.Version, after.Version)
		}

		// Evolve: rename email, add phone.
		tx := tbl.NewTransaction()
		if err := tx.UpdateSchema(true, false).RenameColumn([]string{"email"}, "email_address").
			AddColumn([]string{"phone"}, iceberg.PrimitiveTypes.String, "Mobile number", false, nil).Commit(); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Refresh(ctx, id); err != nil {
			t.Fatal(err)
		}
		_, cols = currentColumns(t, cat, id)
		renamed, ok := cols["email_address"]
		if !ok || renamed.ID != email.ID || *renamed.FieldID != 2 {
			t.Fatalf("email_address after the rename: %+v; want the email column's record %s", renamed, email.ID)
		}
		if renamed.Description != "Where receipts go." {
			t.Errorf("description after the rename: %q", renamed.Description)
		}
		if _, ok := cols["email"]; ok {
			t.Error("email is still a current column")
		}
		if cols["phone"].SourceDoc != "Mobile number" || *cols["phone"].FieldID != 11 {
			t.Errorf("phone: %+v", cols["phone"])
		}
		labels, err := cat.Labels(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(labels) != 1 || labels[0].Column != "email_address" || labels[0].Value != "pii.email" {
			t.Fatalf("labels after the rename: %+v", labels)
		}
		hist, err := cat.SchemaHistory(ctx, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 2 || hist[0].SchemaID == nil || *hist[0].SchemaID != tbl.Metadata().CurrentSchema().ID || hist[0].Source != "iceberg" {
			t.Fatalf("schema history: %+v", hist)
		}
		var ops []string
		for _, ch := range hist[0].Changes {
			ops = append(ops, ch.Op+" "+ch.OldPath+">"+ch.Path)
		}
		slices.Sort(ops)
		if want := []string{"added >phone", "renamed email>email_address"}; !slices.Equal(ops, want) {
			t.Fatalf("schema change %v, want %v", ops, want)
		}

		// Again without a change (and through the catalog sync): nothing recorded.
		before, _ = cat.Get(ctx, id)
		if _, err := svc.Refresh(ctx, id); err != nil {
			t.Fatal(err)
		}
		sync(t, svc)
		if after, _ := cat.Get(ctx, id); after.Version != before.Version {
			t.Fatalf("refresh and sync without a schema change moved the asset from version %d to %d", before.Version, after.Version)
		}
	})
}

// TestRegisterRecordsColumns: a table registered by metadata location gets its columns, and
// registering a later metadata file with another schema records the change.
func TestRegisterRecordsColumns(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		svc, cat := newService(t, db, &clock{t: t0})
		tbl := l.Create("db.events", nil)
		if _, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()}); err != nil {
			t.Fatal(err)
		}
		id := mustResolve(t, cat, tbl).ID
		got, _ := currentColumns(t, cat, id)
		if want := []col{{"id", "long", 1}, {"ts", "timestamptz", 2}, {"region", "string", 3}}; !slices.Equal(got, want) {
			t.Fatalf("columns %v, want %v", got, want)
		}
		// A commit of data only: the schema is the same, so its columns are not even compared
		// (a doc changed behind the catalog's back stays as it is).
		before, err := cat.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Client.Column.Update().Where(column.AssetID(id), column.Path("region")).SetSourceDoc("marker").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		tbl = l.Append(tbl, tablestest.Rows(0, 3, t0))
		if _, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()}); err != nil {
			t.Fatal(err)
		}
		if after, _ := cat.Get(ctx, id); after.Version != before.Version {
			t.Fatalf("a data commit moved the asset from version %d to %d", before.Version, after.Version)
		}
		if _, cols := currentColumns(t, cat, id); cols["region"].SourceDoc != "marker" {
			t.Fatal("a data commit synced the unchanged schema's columns again")
		}
		if row, err := db.Client.IcebergTable.Get(ctx, id); err != nil || row.ColumnsSchemaID == nil || *row.ColumnsSchemaID != 0 {
			t.Fatalf("recorded schema ID: %+v %v", row, err)
		}
		tx := tbl.NewTransaction()
		if err := tx.UpdateSchema(true, false).DeleteColumn([]string{"region"}).Commit(); err != nil {
			t.Fatal(err)
		}
		tbl, err = tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()}); err != nil {
			t.Fatal(err)
		}
		got, _ = currentColumns(t, cat, id)
		if want := []col{{"id", "long", 1}, {"ts", "timestamptz", 2}}; !slices.Equal(got, want) {
			t.Fatalf("columns after dropping region %v, want %v", got, want)
		}
		hist, err := cat.SchemaHistory(ctx, id, 10)
		if err != nil || len(hist) != 2 || len(hist[0].Changes) != 1 || hist[0].Changes[0].Op != "removed" {
			t.Fatalf("schema history: %+v %v", hist, err)
		}
	})
}
