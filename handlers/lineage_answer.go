package handlers

import (
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/lineage"
)

// walkAnswer is an asset lineage answer as the encoders read it, from either source: a View of
// the in-memory graph (now: no string or summary is built per node) or a LineageResult (at a
// time, read from the database).
type walkAnswer struct {
	root            uuid.UUID
	at              *time.Time
	n               int
	node            func(i int) answerNode
	edges           [][2]int32
	reachedPerDepth []int
	truncated       bool
	freshness       lineage.Freshness
	relations       []lineage.Relation
}

// answerNode is a node of a walkAnswer: what the full and compact answers show of it.
type answerNode struct {
	id                            uuid.UUID
	kind, status, namespace, name string
	depth                         int
	formerName                    bool
	deletedSince                  *time.Time
}

func resultAnswer(res lineage.LineageResult) walkAnswer {
	return walkAnswer{root: res.Root, at: res.At, n: len(res.Nodes), edges: res.Edges, reachedPerDepth: res.ReachedPerDepth,
		truncated: res.Truncated, freshness: res.Freshness, relations: res.Relations,
		node: func(i int) answerNode {
			n := &res.Nodes[i]
			return answerNode{id: n.ID, kind: string(n.Kind), status: string(n.Status), namespace: n.Namespace, name: n.Name,
				depth: n.Depth, formerName: n.FormerName, deletedSince: n.DeletedSince}
		}}
}

func viewAnswer(res *lineage.ViewResult) walkAnswer {
	return walkAnswer{root: res.Root, n: res.Len(), edges: res.Edges, reachedPerDepth: res.ReachedPerDepth,
		truncated: res.Truncated, freshness: res.Freshness, relations: res.Relations,
		node: func(i int) answerNode {
			n := res.Node(i)
			return answerNode{id: n.ID, kind: string(n.Kind), status: string(n.Status), namespace: n.Namespace, name: n.Name, depth: n.Depth}
		}}
}

// streamWalk answers an asset lineage request (defLimit nodes unless asked) with the encoding
// write makes of it. Now, the walk is a View of the graph; at a time, the database's answer.
// The budget is held until the answer is written: its encoding is part of the memory.
func (a *API) streamWalk(c echo.Context, defLimit int, write func(w io.Writer, b []byte, ans walkAnswer, dir string, depth int) []byte) error {
	id, dir, depth, limit, err := a.walkParams(c, defLimit)
	if err != nil {
		return err
	}
	at, err := atParam(c)
	if err != nil {
		return err
	}
	held, err := a.reserve(c, limit)
	if err != nil {
		return err
	}
	defer held.Release()
	ctx := c.Request().Context()
	var ans walkAnswer
	if at != nil {
		res, err := a.cfg.Lineage.LineageAt(ctx, id, dir, depth, limit, *at)
		if err != nil {
			return err
		}
		ans = resultAnswer(res)
	} else {
		res, err := a.cfg.Lineage.LineageView(ctx, id, dir, depth, limit)
		if err != nil {
			return err
		}
		defer res.Release()
		ans = viewAnswer(&res)
	}
	held.Keep(ans.n + len(ans.edges))
	return streamJSON(c, func(w io.Writer, b []byte) []byte { return write(w, b, ans, string(dir), depth) })
}
