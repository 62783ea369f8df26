package handlers

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/lineage"
)

// compactLineageResponse documents GET /assets/{id}/lineage/compact. The handler writes it by
// hand as it goes (see writeCompact), so a 100,000-node answer is never held twice in memory.
type compactLineageResponse struct {
	Root      string `json:"root"`
	Direction string `json:"direction"`
	Depth     int    `json:"depth"`
	// At is the time asked for (at=): the graph as it stood then.
	At              *time.Time     `json:"at,omitempty"`
	Truncated       bool           `json:"truncated"`
	ReachedPerDepth []int          `json:"reached_per_depth"`
	Graph           graphFreshness `json:"graph"`
	// NodeFields names the elements of each node array, in order.
	NodeFields []string `json:"node_fields"`
	// Nodes: one array a node: [id, kind, status, namespace, name, depth], the start first;
	// with at two more, former_name (bool) and deleted_since (a time or null).
	Nodes [][]any `json:"nodes"`
	// Edges: [from, to] as indexes into nodes.
	Edges [][2]int `json:"edges"`
	// Relations of the root that are not data flow (migrated_to), by asset ID.
	Relations []relationResponse `json:"relations"`
}

func (a *API) compactLineage(c echo.Context) error {
	return a.streamWalk(c, a.cfg.Lineage.MaxNodes(), writeCompact)
}

// answerBufs are the buffers hand-written answers are appended into, reused across requests.
// A new one has room for what spill holds back and a node more, so it never grows: grown from
// less, a fresh buffer left three smaller ones behind as garbage.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, spillAt+32<<10); return &b }}

// streamJSON answers 200 with the JSON write writes, as it writes it (a HEAD gets the headers).
// write appends into b, spilling it to w as it fills, writes out the rest and returns b.
// Errors writing are not returned: a client that went away has nothing to be told.
func streamJSON(c echo.Context, write func(w io.Writer, b []byte) []byte) error {
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	w.WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	bp := answerBufs.Get().(*[]byte)
	if b := write(w, (*bp)[:0]); cap(b) <= 1<<20 { // an odd huge one is not kept
		*bp = b[:0]
		answerBufs.Put(bp)
	}
	return nil
}

// spillAt is how much of an answer spill holds back before writing it out.
const spillAt = 256 << 10

// spill writes b out once it holds enough to be worth a write, returning it empty then. A
// quarter MiB a write: each write is a chunk and two or three system calls, and a 10 MB answer
// written 48 KiB at a time spent a good part of its time in them.
func spill(w io.Writer, b []byte) []byte {
	if len(b) > spillAt {
		_, _ = w.Write(b)
		return b[:0]
	}
	return b
}

// appendWalkHead opens a lineage answer with its root, direction, depth and the time asked
// for, if any.
func appendWalkHead(b []byte, ans walkAnswer, dir string, depth int) []byte {
	b = append(b, `{"root":"`...)
	b = appendUUID(b, ans.root)
	b = append(b, `","direction":`...)
	b = appendString(b, dir)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(depth), 10)
	if ans.at != nil {
		b = append(b, `,"at":`...)
		b = appendTime(b, *ans.at)
	}
	return b
}

// appendTimeOrNull appends t, null when nil.
func appendTimeOrNull(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

// writeCompact encodes a lineage answer as compactLineageResponse, appending into one buffer
// that is written out each time it fills: no reflection, no per-node allocation.
func writeCompact(w io.Writer, b []byte, ans walkAnswer, dir string, depth int) []byte {
	b = appendWalkHead(b, ans, dir, depth)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, ans.truncated)
	b = append(b, `,"reached_per_depth":[`...)
	for i, n := range ans.reachedPerDepth {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, `],"graph":`...)
	b = appendFreshness(b, ans.freshness)
	if ans.at != nil {
		b = append(b, `,"node_fields":["id","kind","status","namespace","name","depth","former_name","deleted_since"],"nodes":[`...)
	} else {
		b = append(b, `,"node_fields":["id","kind","status","namespace","name","depth"],"nodes":[`...)
	}
	for i := range ans.n {
		n := ans.node(i)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `["`...)
		b = appendUUID(b, n.id)
		b = append(b, `",`...)
		b = appendString(b, n.kind)
		b = append(b, ',')
		b = appendString(b, n.status)
		b = append(b, ',')
		b = appendString(b, n.namespace)
		b = append(b, ',')
		b = appendString(b, n.name)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(n.depth), 10)
		if ans.at != nil {
			b = append(b, ',')
			b = strconv.AppendBool(b, n.formerName)
			b = append(b, ',')
			b = appendTimeOrNull(b, n.deletedSince)
		}
		b = append(b, ']')
		b = spill(w, b)
	}
	b = append(b, `],"edges":[`...)
	for i, e := range ans.edges {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(e[0]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(e[1]), 10)
		b = append(b, ']')
		b = spill(w, b)
	}
	b = append(b, `],"relations":`...)
	b = appendRelations(b, ans.relations)
	b = append(b, "}\n"...)
	_, _ = w.Write(b)
	return b
}

// idTexts hold an answer's node IDs as text, 36 bytes a node, reused across requests: each
// edge names two nodes by ID, and copying the text written for the node is cheaper than
// encoding it again from a node record met at random.
var idTexts sync.Pool

// writeFull encodes a lineage answer as toFull's value would encode (a test holds it to that),
// appending into one buffer as writeCompact does.
func writeFull(w io.Writer, b []byte, ans walkAnswer, dir string, depth int) []byte {
	var ids []byte
	if p, _ := idTexts.Get().(*[]byte); p != nil && cap(*p) >= 36*ans.n {
		ids = (*p)[:36*ans.n]
	} else {
		ids = make([]byte, 36*ans.n)
	}
	defer func() {
		if cap(ids) <= 8<<20 {
			idTexts.Put(&ids)
		}
	}()
	b = appendWalkHead(b, ans, dir, depth)
	b = append(b, `,"nodes":[`...)
	for i := range ans.n {
		n := ans.node(i)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":"`...)
		b = appendUUID(b, n.id)
		copy(ids[36*i:36*i+36], b[len(b)-36:])
		b = append(b, `","kind":`...)
		b = appendString(b, n.kind)
		b = append(b, `,"status":`...)
		b = appendString(b, n.status)
		b = append(b, `,"namespace":`...)
		b = appendString(b, n.namespace)
		b = append(b, `,"name":`...)
		b = appendString(b, n.name)
		b = append(b, `,"depth":`...)
		b = strconv.AppendInt(b, int64(n.depth), 10)
		if n.formerName {
			b = append(b, `,"former_name":true`...)
		}
		if n.deletedSince != nil {
			b = append(b, `,"deleted_since":`...)
			b = appendTime(b, *n.deletedSince)
		}
		b = append(b, '}')
		b = spill(w, b)
	}
	b = append(b, `],"edges":[`...)
	for i, e := range ans.edges {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"from":"`...)
		b = append(b, ids[36*e[0]:36*e[0]+36]...)
		b = append(b, `","to":"`...)
		b = append(b, ids[36*e[1]:36*e[1]+36]...)
		b = append(b, `"}`...)
		b = spill(w, b)
	}
	b = append(b, `],"truncated":`...)
	b = strconv.AppendBool(b, ans.truncated)
	b = append(b, `,"reached_per_depth":`...)
	b = appendInts(b, ans.reachedPerDepth)
	b = append(b, `,"graph":`...)
	b = appendFreshness(b, ans.freshness)
	b = append(b, `,"relations":`...)
	b = appendRelations(b, ans.relations)
	b = append(b, "}\n"...)
	_, _ = w.Write(b)
	return b
}

// appendFreshness appends f as encoding/json writes freshness(f), without its reflection.
func appendFreshness(b []byte, f lineage.Freshness) []byte {
	g := freshness(f)
	b = append(b, `{"synced_at":`...)
	b = appendTime(b, g.SyncedAt)
	b = append(b, `,"lag_ms":`...)
	b = strconv.AppendInt(b, g.LagMS, 10)
	b = append(b, `,"nodes":`...)
	b = strconv.AppendInt(b, int64(g.Nodes), 10)
	b = append(b, `,"edges":`...)
	b = strconv.AppendInt(b, int64(g.Edges), 10)
	return append(b, '}')
}

// appendRelations appends rs as encoding/json writes toRelations(rs) (an empty array when none).
func appendRelations(b []byte, rs []lineage.Relation) []byte {
	b = append(b, '[')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"from":"`...)
		b = appendUUID(b, r.From)
		b = append(b, `","to":"`...)
		b = appendUUID(b, r.To)
		b = append(b, `","kind":`...)
		b = appendString(b, r.Kind)
		b = append(b, `,"ref":"`...)
		b = appendUUID(b, r.Ref)
		b = append(b, `"}`...)
	}
	return append(b, ']')
}

// appendInts appends s as a JSON array (null when nil, as encoding/json writes it).
func appendInts(b []byte, s []int) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, n := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return append(b, ']')
}

// writeMarquez encodes the Marquez answer as toMarquez's value would encode (a test holds it
// to that), appending into one buffer as writeCompact does: encoding/json's reflection was
// most of the time of a small answer.
func writeMarquez(w io.Writer, b []byte, nodes []lineage.GraphNode, res lineage.LineageResult) []byte {
	edge := func(origin, dest string) {
		b = append(b, `{"origin":`...)
		b = appendString(b, origin)
		b = append(b, `,"destination":`...)
		b = appendString(b, dest)
		b = append(b, '}')
	}
	b = append(b, `{"graph":[`...)
	for i, n := range nodes {
		if i > 0 {
			b = append(b, ',')
		}
		typ, dataType := marquezTypes(n.Kind)
		b = append(b, `{"id":`...)
		b = appendString(b, n.NodeID)
		b = append(b, `,"type":"`...)
		b = append(b, typ...)
		b = append(b, `","data":{"id":{"namespace":`...)
		b = appendString(b, n.Namespace)
		b = append(b, `,"name":`...)
		b = appendString(b, n.Name)
		b = append(b, `},"type":"`...)
		b = append(b, dataType...)
		b = append(b, `","name":`...)
		b = appendString(b, n.Name)
		b = append(b, `,"physicalName":`...)
		b = appendString(b, n.Name)
		b = append(b, `,"namespace":`...)
		b = appendString(b, n.Namespace)
		b = append(b, `,"createdAt":`...)
		b = appendTime(b, n.CreatedAt)
		b = append(b, `,"updatedAt":`...)
		b = appendTime(b, n.UpdatedAt)
		b = append(b, `,"fields":[`...)
		for j, f := range n.Fields {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, f.Name)
			b = append(b, `,"type":`...)
			b = appendString(b, f.Type)
			b = append(b, `,"tags":[],"description":`...)
			b = appendString(b, f.Description)
			b = append(b, '}')
		}
		b = append(b, `],"tags":[],"description":`...)
		b = appendString(b, n.Description)
		b = append(b, `,"assetId":"`...)
		b = appendUUID(b, n.ID)
		b = append(b, `","status":`...)
		b = appendString(b, string(n.Status))
		if n.FormerName {
			b = append(b, `,"formerName":true`...)
		}
		if n.DeletedSince != nil {
			b = append(b, `,"deletedSince":`...)
			b = appendTime(b, *n.DeletedSince)
		}
		b = append(b, `},"inEdges":[`...)
		for j, o := range n.InEdges {
			if j > 0 {
				b = append(b, ',')
			}
			edge(o, n.NodeID)
		}
		b = append(b, `],"outEdges":[`...)
		for j, d := range n.OutEdges {
			if j > 0 {
				b = append(b, ',')
			}
			edge(n.NodeID, d)
		}
		b = append(b, "]}"...)
		b = spill(w, b)
	}
	b = append(b, `],"truncated":`...)
	b = strconv.AppendBool(b, res.Truncated)
	b = append(b, `,"freshness":`...)
	b = appendFreshness(b, res.Freshness)
	if res.At != nil {
		b = append(b, `,"at":`...)
		b = appendTime(b, *res.At)
	}
	b = append(b, "}\n"...)
	_, _ = w.Write(b)
	return b
}

// appendTime appends t as encoding/json writes a time.Time.
func appendTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 { // not RFC 3339: as encoding/json would fail, say so
		q, _ := json.Marshal(t.Format(time.RFC3339Nano))
		return append(b, q...)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendUUID appends id in its canonical text form without allocating.
func appendUUID(b []byte, id uuid.UUID) []byte {
	var t [36]byte
	hex.Encode(t[0:8], id[0:4])
	t[8] = '-'
	hex.Encode(t[9:13], id[4:6])
	t[13] = '-'
	hex.Encode(t[14:18], id[6:8])
	t[18] = '-'
	hex.Encode(t[19:23], id[8:10])
	t[23] = '-'
	hex.Encode(t[24:], id[10:])
	return append(b, t[:]...)
}

// appendString appends s as a JSON string. Names are valid UTF-8 (input is checked), so only
// quotes, backslashes and control characters need escaping; anything else goes to encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			return appendStringSlow(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON marks the ASCII bytes a JSON string holds as they are.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func appendStringSlow(b []byte, s string) []byte {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' }) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}
