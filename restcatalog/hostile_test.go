package restcatalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestHostileCommitsRefused is issue 42's reproductions at the door: a write token names another
// table's manifest list, statistics files anywhere, a data path inside another table, and
// percent-encoded locations that climb out of the warehouse. Each is refused with a 400 that
// says what to fix; no pointer moves, nothing is written outside the warehouse, and the other
// table still reads.
func TestHostileCommitsRefused(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		victim := s.append(t, create(t, cat, "h", "victim"), 0, 3)
		ex := s.append(t, create(t, cat, "h", "ex"), 0, 3)
		wh := s.Warehouse
		cur := ex.CurrentSnapshot()
		exPath := "/iceberg/v1/main/namespaces/h/tables/ex"
		schema := `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}`
		addSnapshot := func(list string) string {
			return fmt.Sprintf(`{"requirements":[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":%d}],"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":%d,"parent-snapshot-id":%d,"sequence-number":%d,"timestamp-ms":%d,"manifest-list":%q,"summary":{"operation":"append"},"schema-id":0}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}]}`,
				cur.SnapshotID, cur.SnapshotID+77, cur.SnapshotID, ex.Metadata().LastSequenceNumber()+1, time.Now().UnixMilli(), list, cur.SnapshotID+77)
		}
		setProps := func(k, v string) string {
			return fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-properties","updates":{%q:%q}}]}`, k, v)
		}
		setStats := func(p string) string {
			return fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-statistics","snapshot-id":%d,"statistics":{"snapshot-id":%d,"statistics-path":%q,"file-size-in-bytes":10,"file-footer-size-in-bytes":4,"blob-metadata":[]}}]}`, cur.SnapshotID, cur.SnapshotID, p)
		}
		createAt := func(name, loc string) string {
			return fmt.Sprintf(`{"name":%q,"location":%q,"schema":%s}`, name, loc, schema)
		}
		// The victim's directory with its first letter percent-encoded: the same directory to
		// iceberg-go's local IO, another one to a literal reading.
		vdir := filepath.Base(strings.TrimPrefix(victim.Location(), "file://"))
		encodedVictim := "file:" + wh + "/h/" + fmt.Sprintf("%%%02X", vdir[0]) + vdir[1:]
		cases := []struct {
			name, path, body string
			status           int
			says             string
		}{
			{"ForeignManifestList", exPath, addSnapshot(victim.CurrentSnapshot().ManifestList), 400, "outside the table's location"},
			{"ManifestListOutsideTheWarehouse", exPath, addSnapshot("file:///etc/hostname"), 400, "outside the table's location"},
			{"StatisticsAnywhere", exPath, setStats("/etc/passwd"), 400, "statistics file"},
			{"StatisticsOfAnotherTable", exPath, setStats(victim.MetadataLocation()), 400, "outside the table's location"},
			{"DataPathIntoAnotherTable", exPath, setProps("write.data.path", victim.Location()+"/data"), 400, "write.data.path"},
			{"DataPathOutside", exPath, setProps("write.data.path", "file:///tmp/tidemark-elsewhere"), 400, "write.data.path"},
			{"MetadataPathEncodedDots", exPath, setProps("write.metadata.path", "file:"+wh+"/%2e%2e/%2e%2e/escape"), 400, "percent-escape"},
			{"SetLocationEncodedDots", exPath, `{"requirements":[],"updates":[{"action":"set-location","location":"file:` + wh + `/%2e%2e/escape"}]}`, 400, "percent-escape"},
			{"SetLocationIntoAnotherTable", exPath, `{"requirements":[],"updates":[{"action":"set-location","location":"` + victim.Location() + `/data/x"}]}`, 409, "overlaps"},
			{"CreateEncodedDots", "/iceberg/v1/main/namespaces/h/tables", createAt("esc", "file:"+wh+"/%2e%2e/%2e%2e/escape"), 400, "percent-escape"},
			{"CreateInAnotherTableEncoded", "/iceberg/v1/main/namespaces/h/tables", createAt("twin", encodedVictim), 400, "percent-escape"},
			{"CreateQueryTrick", "/iceberg/v1/main/namespaces/h/tables", createAt("q", "file://"+wh+"/h/q?/../../escape"), 400, "storage reads differently"},
			{"RegisterEncoded", "/iceberg/v1/main/namespaces/h/register", `{"name":"reg","metadata-location":"file:` + wh + `/%2e%2e/x.metadata.json"}`, 400, "percent-escape"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				token := s.Writer
				if strings.HasSuffix(c.path, "/register") {
					token = s.Token // register needs admin
				}
				code, body := s.do(t, "POST", c.path, token, c.body, nil)
				if code != c.status {
					t.Fatalf("status %d, want %d: %s", code, c.status, body)
				}
				var e struct {
					Error struct{ Message string } `json:"error"`
				}
				if err := json.Unmarshal([]byte(body), &e); err != nil || !strings.Contains(e.Error.Message, c.says) {
					t.Fatalf("the message should say %q: %s", c.says, body)
				}
			})
		}
		// A commit through iceberg-go that adds another table's data file by path.
		t.Run("ForeignDataFile", func(t *testing.T) {
			var foreign string
			for p := range s.lake.Files(victim, *victim.CurrentSnapshot()) {
				foreign = p
			}
			b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, foreign, iceberg.ParquetFile, nil, nil, nil, 1, 10)
			if err != nil {
				t.Fatal(err)
			}
			txn := ex.NewTransaction()
			if err := txn.AddDataFiles(ctx, []iceberg.DataFile{b.Build()}, nil, table.WithoutDuplicateCheck()); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Commit(ctx); err == nil || !strings.Contains(err.Error(), "outside the table's location") {
				t.Fatalf("a commit naming another table's data file: %v", err)
			}
		})
		for _, tb := range []*table.Table{victim, ex} {
			after, err := cat.LoadTable(ctx, tb.Identifier())
			if err != nil {
				t.Fatal(err)
			}
			if after.MetadataLocation() != tb.MetadataLocation() {
				t.Fatalf("a refused commit moved %v to %s", tb.Identifier(), after.MetadataLocation())
			}
		}
		if n, err := s.lake.Intact(victim); err != nil || n != 3 {
			t.Fatalf("the victim reads %d rows, %v", n, err)
		}
		for _, p := range []string{filepath.Join(filepath.Dir(wh), "escape"), filepath.Join(filepath.Dir(filepath.Dir(wh)), "escape")} {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("something was written outside the warehouse: %s", p)
			}
		}
	})
}

// TestBounds: a schema nested 3,000 levels deep (94 s of CPU to create before) and one just
// past the schema limit are refused with a 400 before they are parsed or stored; so are
// namespaces and tables with more properties, or longer ones, than the limits. Nothing is created.
func TestBounds(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		create(t, s.client(t), "b", "t")
		nested := func(levels int) string {
			id := 0
			var typ func(n int) string
			typ = func(n int) string {
				if n == 0 {
					return `"long"`
				}
				id++
				mine := id
				inner := typ(n - 1)
				return fmt.Sprintf(`{"type":"struct","fields":[{"id":%d,"name":"f","required":false,"type":%s}]}`, mine, inner)
			}
			return fmt.Sprintf(`{"name":"deep","schema":{"type":"struct","schema-id":0,"fields":[{"id":100000,"name":"top","required":false,"type":%s}]}}`, typ(levels))
		}
		many := func(n, size int) string {
			m := map[string]string{}
			for i := range n {
				m[fmt.Sprintf("k%05d", i)] = strings.Repeat("v", size)
			}
			b, _ := json.Marshal(m)
			return string(b)
		}
		cases := []struct {
			name, path, body, says string
		}{
			{"SchemaThousandsDeep", "/iceberg/v1/main/namespaces/b/tables", nested(3000), "nests JSON"},
			{"SchemaPastTheLimit", "/iceberg/v1/main/namespaces/b/tables", nested(40), "nested more than 32 levels"},
			{"NamespaceManyProperties", "/iceberg/v1/main/namespaces", `{"namespace":["p"],"properties":` + many(1001, 1) + `}`, "at most 1000"},
			{"NamespaceHugeProperties", "/iceberg/v1/main/namespaces/b/properties", `{"removals":[],"updates":` + many(20, 60<<10) + `}`, "the limit is 1048576"},
			{"TablePropertyTooLong", "/iceberg/v1/main/namespaces/b/tables/t", `{"requirements":[],"updates":[{"action":"set-properties","updates":{"big":"` + strings.Repeat("x", 70<<10) + `"}}]}`, "the limit is 65536"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				code, body := s.do(t, "POST", c.path, s.Writer, c.body, nil)
				if code != 400 || !strings.Contains(body, c.says) {
					t.Fatalf("%d, want 400 saying %q: %.300s", code, c.says, body)
				}
			})
		}
		var list struct {
			Identifiers []any `json:"identifiers"`
		}
		if code, body := s.do(t, "GET", "/iceberg/v1/main/namespaces/b/tables", s.Token, "", &list); code != 200 || len(list.Identifiers) != 1 {
			t.Fatalf("namespace b should hold only t: %d %s", code, body)
		}
		if got := loadProps(t, s, "/iceberg/v1/main/namespaces/b/tables/t")["big"]; got != "" {
			t.Fatal("a refused property was stored")
		}
	})
}

// TestRacingLocations: two creates naming one location, sent at once, and two set-locations to
// one place: at most one table holds the location afterwards (10 rounds a store; before, both
// creates succeeded on PostgreSQL in 10 of 10 rounds).
func TestRacingLocations(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		cat := s.client(t)
		create(t, cat, "r", "seed")
		schema := `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}`
		race := func(bodies [2][2]string) [2]int {
			var codes [2]int
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i], _ = s.do(t, "POST", bodies[i][0], s.Writer, bodies[i][1], nil)
				}()
			}
			wg.Wait()
			return codes
		}
		for round := range 10 {
			loc := fmt.Sprintf("file://%s/r/shared-%d", s.Warehouse, round)
			codes := race([2][2]string{
				{"/iceberg/v1/main/namespaces/r/tables", fmt.Sprintf(`{"name":"a%d","location":%q,"schema":%s}`, round, loc, schema)},
				{"/iceberg/v1/main/namespaces/r/tables", fmt.Sprintf(`{"name":"b%d","location":%q,"schema":%s}`, round, loc, schema)},
			})
			if ok := btoi(codes[0] == 200) + btoi(codes[1] == 200); ok != 1 {
				t.Fatalf("round %d: creates at one location answered %v: exactly one may take it", round, codes)
			}
			// Two existing tables moved to one new place.
			c1 := create(t, cat, "r", fmt.Sprintf("m%d", round))
			c2 := create(t, cat, "r", fmt.Sprintf("n%d", round))
			to := fmt.Sprintf("file://%s/r/moved-%d", s.Warehouse, round)
			move := fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-location","location":%q}]}`, to)
			codes = race([2][2]string{
				{"/iceberg/v1/main/namespaces/r/tables/" + c1.Identifier()[1], move},
				{"/iceberg/v1/main/namespaces/r/tables/" + c2.Identifier()[1], move},
			})
			if ok := btoi(codes[0] == 200) + btoi(codes[1] == 200); ok != 1 {
				t.Fatalf("round %d: set-locations to one place answered %v: exactly one may take it", round, codes)
			}
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRacingAdoption: eight creates of one name race to adopt the asset lineage created under
// that name before: one wins, and the asset is bound to exactly its table-uuid (before, racing
// creates bound 3-8 table-uuids to it on PostgreSQL).
func TestRacingAdoption(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		create(t, s.client(t), "ad", "seed")
		res, err := s.App.Catalog.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "iceberg://main", Name: "ad.t"})
		if err != nil {
			t.Fatal(err)
		}
		schema := `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}`
		codes := make([]int, 8)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _ = s.do(t, "POST", "/iceberg/v1/main/namespaces/ad/tables", s.Writer, `{"name":"t","schema":`+schema+`}`, nil)
			}()
		}
		wg.Wait()
		won := 0
		for _, c := range codes {
			won += btoi(c == 200)
		}
		if won != 1 {
			t.Fatalf("racing creates answered %v: exactly one may create the table", codes)
		}
		tbl, err := s.client(t).LoadTable(ctx, table.Identifier{"ad", "t"})
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.App.Catalog.Get(ctx, res.Asset.ID)
		if err != nil {
			t.Fatal(err)
		}
		var bound []string
		for _, x := range a.ExternalIDs {
			if x.System == catalog.SystemIcebergTable {
				bound = append(bound, x.Value)
			}
		}
		if len(bound) != 1 || bound[0] != tbl.Metadata().TableUUID().String() {
			t.Fatalf("the adopted asset is bound to table-uuids %v, want only the winner's %s", bound, tbl.Metadata().TableUUID())
		}
	})
}

// TestRegisterFIFO: a register naming a FIFO inside the warehouse is refused at once (it is not
// a regular file); before, the open waited for a writer and pinned a thread.
func TestRegisterFIFO(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		create(t, s.client(t), "f", "seed")
		fifo := filepath.Join(s.Warehouse, "f", "pipe.metadata.json")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var code int
		var body string
		go func() {
			defer close(done)
			code, body = s.do(t, "POST", "/iceberg/v1/main/namespaces/f/register", s.Token, `{"name":"p","metadata-location":"file://`+fifo+`"}`, nil)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			w, _ := os.OpenFile(fifo, os.O_WRONLY, 0) // unblock the server so the test can end
			w.Close()
			t.Fatal("a register of a FIFO is still waiting after 30 s")
		}
		if code != 400 || !strings.Contains(body, "not a regular file") {
			t.Fatalf("register of a FIFO: %d %s", code, body)
		}
	})
}
