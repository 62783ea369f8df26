package handlers

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
)

// FuzzAppendString: the compact lineage encoder writes names (outside input) by hand; whatever
// the name, the result is one JSON string that decodes to it (invalid UTF-8 as encoding/json
// would write it).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "orders", `a"b`, `back\slash`, "tab\there", "\x01\x1f", "ünïcødé", "\u2028", "\xff\xfe", "</script>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString([]byte("["), s)
		b = append(b, ']')
		var got []string
		if err := json.Unmarshal(b, &got); err != nil || len(got) != 1 {
			t.Fatalf("appendString(%q) = %s: %v", s, b, err)
		}
		want := s
		if !utf8.ValidString(s) {
			q, _ := json.Marshal(s)
			_ = json.Unmarshal(q, &want)
		}
		if got[0] != want {
			t.Fatalf("appendString(%q) decodes to %q", s, got[0])
		}
	})
}

func TestAppendUUID(t *testing.T) {
	for range 100 {
		id := uuid.New()
		if got := string(appendUUID(nil, id)); got != id.String() {
			t.Fatalf("appendUUID = %s; want %s", got, id)
		}
	}
}

// TestWriteMarquez: the hand-written Marquez answer decodes to exactly what encoding/json makes
// of the same answer as a value, odd names and all.
func TestWriteMarquez(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891011, time.UTC)
	nodes := []lineage.GraphNode{
		{Summary: catalog.Summary{ID: uuid.New(), Kind: catalog.KindTable, Status: catalog.StatusActive, Namespace: "postgres://h:5432",
			Name: `odd "name" <b>&\` + "\t\u2028ü", CreatedAt: at, UpdatedAt: at.Add(time.Hour).In(time.FixedZone("x", 3600))},
			NodeID: "dataset:postgres://h:5432:odd", Description: "line\nbreak",
			Fields:  []lineage.SchemaField{{Name: "id", Type: "BIGINT", Description: "the key"}, {Name: "\x01", Type: ""}},
			InEdges: []string{"job:ns:j"}, OutEdges: []string{}},
		{Summary: catalog.Summary{ID: uuid.New(), Kind: catalog.KindJob, Status: catalog.StatusDeleted, Namespace: "ns", Name: "j",
			CreatedAt: at, UpdatedAt: at}, NodeID: "job:ns:j", InEdges: []string{}, OutEdges: []string{"dataset:postgres://h:5432:odd", "x"}},
	}
	res := lineage.LineageResult{Truncated: true, Freshness: lineage.Freshness{SyncedAt: at, Nodes: 2, Edges: 1}}
	// The same graph asked at a time: the first node renamed since, the second deleted since.
	deleted := at.Add(time.Hour)
	past := append([]lineage.GraphNode{}, nodes...)
	past[0].FormerName, past[1].DeletedSince = true, &deleted
	pastRes := res
	pastRes.At = &at
	for _, tc := range []struct {
		nodes []lineage.GraphNode
		res   lineage.LineageResult
	}{{nodes, res}, {past, pastRes}} {
		var buf bytes.Buffer
		writeMarquez(&buf, nil, tc.nodes, tc.res)
		var got, want any
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("writeMarquez wrote invalid JSON: %v\n%s", err, buf.Bytes())
		}
		b, _ := json.Marshal(toMarquez(tc.nodes, tc.res))
		_ = json.Unmarshal(b, &want)
		got.(map[string]any)["freshness"].(map[string]any)["lag_ms"] = want.(map[string]any)["freshness"].(map[string]any)["lag_ms"]
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("writeMarquez:\n%s\nencoding/json:\n%s", buf.Bytes(), b)
		}
	}
}

// TestWriteFull: the hand-written full lineage answer decodes to exactly what encoding/json
// makes of the same answer as a value.
func TestWriteFull(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	later := at.Add(90 * time.Minute)
	a, b := uuid.New(), uuid.New()
	for _, res := range []lineage.LineageResult{
		{Root: a, Nodes: []lineage.Node{
			{Summary: catalog.Summary{ID: a, Kind: catalog.KindTable, Status: catalog.StatusActive, Namespace: "pg://h:5432", Name: `odd "name" <b>&` + "\t\u2028"}},
			{Summary: catalog.Summary{ID: b, Kind: catalog.KindJob, Status: catalog.StatusDeleted, Namespace: "ns", Name: "j"}, Depth: 1}},
			Edges: [][2]int32{{1, 0}}, ReachedPerDepth: []int{1, 1}, Truncated: true, Freshness: lineage.Freshness{SyncedAt: at, Nodes: 2, Edges: 1},
			Relations: []lineage.Relation{{From: a, To: b, Kind: "migrated_to", Ref: uuid.New()}}},
		{Root: a, Nodes: []lineage.Node{{Summary: catalog.Summary{ID: a, Kind: catalog.KindTable, Status: catalog.StatusActive, Namespace: "n", Name: "x"}}},
			Edges: [][2]int32{}, Relations: []lineage.Relation{}},
		{Root: a, At: &at, Nodes: []lineage.Node{ // at a time: a former name, an asset deleted since
			{Summary: catalog.Summary{ID: a, Kind: catalog.KindTable, Status: catalog.StatusActive, Namespace: "n", Name: "old"}, FormerName: true},
			{Summary: catalog.Summary{ID: b, Kind: catalog.KindJob, Status: catalog.StatusDeleted, Namespace: "n", Name: "j"}, Depth: 1, FormerName: true, DeletedSince: &later}},
			Edges: [][2]int32{{1, 0}}, ReachedPerDepth: []int{1, 1}, Relations: []lineage.Relation{}},
	} {
		var buf bytes.Buffer
		writeFull(&buf, nil, resultAnswer(res), "both", 3)
		var got, want any
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("writeFull wrote invalid JSON: %v\n%s", err, buf.Bytes())
		}
		enc, _ := json.Marshal(toFull(res, "both", 3))
		_ = json.Unmarshal(enc, &want)
		got.(map[string]any)["graph"].(map[string]any)["lag_ms"] = want.(map[string]any)["graph"].(map[string]any)["lag_ms"]
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("writeFull:\n%s\nencoding/json:\n%s", buf.Bytes(), enc)
		}
	}
}

// toFull is the full lineage answer as a value: what writeFull writes, kept to test it against.
func toFull(res lineage.LineageResult, dir string, depth int) assetLineageResponse {
	out := assetLineageResponse{Root: res.Root, Direction: dir, Depth: depth, At: res.At, Nodes: make([]lineageNode, 0, len(res.Nodes)),
		Edges: make([]lineageEdge, 0, len(res.Edges)), Truncated: res.Truncated, ReachedPerDepth: res.ReachedPerDepth, Graph: freshness(res.Freshness),
		Relations: toRelations(res.Relations)}
	for _, n := range res.Nodes {
		out.Nodes = append(out.Nodes, lineageNode{ID: n.ID, Kind: string(n.Kind), Status: string(n.Status), Namespace: n.Namespace, Name: n.Name, Depth: n.Depth,
			FormerName: n.FormerName, DeletedSince: n.DeletedSince})
	}
	for _, e := range res.Edges {
		out.Edges = append(out.Edges, lineageEdge{From: res.Nodes[e[0]].ID, To: res.Nodes[e[1]].ID})
	}
	return out
}

// toMarquez is the Marquez answer as a value: what writeMarquez writes, kept to test it against.
func toMarquez(nodes []lineage.GraphNode, res lineage.LineageResult) marquezGraphResponse {
	out := marquezGraphResponse{Graph: make([]marquezNode, 0, len(nodes)), Truncated: res.Truncated, Freshness: freshness(res.Freshness), At: res.At}
	for _, n := range nodes {
		typ, dataType := marquezTypes(n.Kind)
		m := marquezNode{ID: n.NodeID, Type: typ, InEdges: []marquezEdge{}, OutEdges: []marquezEdge{},
			Data: marquezData{ID: marquezDatasetID{n.Namespace, n.Name}, Type: dataType, Name: n.Name, PhysicalName: n.Name,
				Namespace: n.Namespace, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt, Fields: []marquezField{}, Tags: []string{},
				Description: n.Description, AssetID: n.ID, Status: string(n.Status), FormerName: n.FormerName, DeletedSince: n.DeletedSince}}
		for _, f := range n.Fields {
			m.Data.Fields = append(m.Data.Fields, marquezField{Name: f.Name, Type: f.Type, Tags: []string{}, Description: f.Description})
		}
		for _, o := range n.InEdges {
			m.InEdges = append(m.InEdges, marquezEdge{Origin: o, Destination: n.NodeID})
		}
		for _, d := range n.OutEdges {
			m.OutEdges = append(m.OutEdges, marquezEdge{Origin: n.NodeID, Destination: d})
		}
		out.Graph = append(out.Graph, m)
	}
	return out
}
