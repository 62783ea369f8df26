package web

// The write path as pages: a served table's commits (with its commit health at the top), its
// write-path inventory grouped by snapshot, and the snapshot timeline of every Iceberg table
// Tidemark knows (served, synced or registered), read from its stored inspection of the
// table's current metadata.

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/warehouse"
)

// Rows a page of each list shows.
const (
	commitsPage   = 50
	inventoryPage = 200
	snapshotsPage = 50
)

// writePathHead is what the three pages share: the table, its name and whether Tidemark
// serves it (and so records its commits and inventory).
type writePathHead struct {
	AssetID uuid.UUID
	Name    string
	Table   tables.Table
	Source  string
	Served  bool // served by Tidemark's warehouse, and this server records its write path
	Tab     string
}

type commitsPageData struct {
	writePathHead
	Health *warehouse.CommitHealth
	Items  []commitView
	First  string // the newest page, when this is not it
	Next   string
}

type commitView struct {
	warehouse.CommitRecord
	Outcome string // committed, refused (409), abandoned, pending
	Took    string // how long the attempt took, when it finished
}

type inventoryPageData struct {
	writePathHead
	Snapshot *int64 // the filter: one snapshot's files
	Groups   []inventoryGroup
	Files    int
	First    string
	Next     string
}

// inventoryGroup is the files of one commit's one snapshot, in the order they were recorded
// (snapshot 0: the commit's metadata file).
type inventoryGroup struct {
	CommitID   uuid.UUID
	SnapshotID int64
	RecordedAt time.Time
	Files      []warehouse.InventoryFile
	Bytes      int64
}

type snapshotsPageData struct {
	writePathHead
	NotInspected string // why there is no timeline yet
	Inspected    *time.Time
	Total        int
	From         int
	Items        []snapshotView
	Prev, Next   string
}

type snapshotView struct {
	tables.Snapshot
	AddedFiles, DeletedFiles     string
	AddedRecords, DeletedRecords string
	TotalRecords                 string
}

func (u *UI) writePathRoutes() {
	u.handleFunc("GET /tables/{id}/commits", u.commitsPage)
	u.handleFunc("GET /tables/{id}/inventory", u.inventoryPage)
	u.handleFunc("GET /tables/{id}/snapshots", u.snapshotsPage)
}

// writePathTable reads the table a write-path page is about: an unknown ID is the 404 page.
func (u *UI) writePathTable(r *http.Request, tab string) (writePathHead, error) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return writePathHead{}, &catalog.Error{Kind: catalog.ErrInvalid, Message: "That is not a table's asset ID."}
	}
	if u.cfg.Tables == nil {
		return writePathHead{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: "This server does not read Iceberg tables."}
	}
	t, err := u.cfg.Tables.Get(r.Context(), id)
	var de *catalog.Error
	if errors.As(err, &de) && errors.Is(err, catalog.ErrNotFound) {
		return writePathHead{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: "No Iceberg table has asset ID " + id.String() + ": see the tables page for those Tidemark knows."}
	}
	if err != nil {
		return writePathHead{}, err
	}
	names, err := u.names(r, []uuid.UUID{id}, true)
	if err != nil {
		return writePathHead{}, err
	}
	h := writePathHead{AssetID: id, Name: names[id], Table: t, Source: source(t), Tab: tab,
		Served: t.Warehouse != "" && u.cfg.Warehouse != nil}
	if h.Name == "" {
		h.Name = short(id)
	}
	return h, nil
}

func (u *UI) commitsPage(w http.ResponseWriter, r *http.Request) {
	h, err := u.writePathTable(r, "commits")
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := commitsPageData{writePathHead: h}
	if h.Served {
		ctx := r.Context()
		before, err := cursorParam(r, "before")
		if err != nil {
			u.fail(w, r, err)
			return
		}
		ch, err := u.cfg.Warehouse.CommitHealth(ctx, h.AssetID, warehouse.DefaultCommitWindow)
		if err != nil {
			u.fail(w, r, err)
			return
		}
		d.Health = &ch
		recs, more, err := u.cfg.Warehouse.Commits(ctx, h.AssetID, before, commitsPage)
		if err != nil {
			u.fail(w, r, err)
			return
		}
		for _, c := range recs {
			v := commitView{CommitRecord: c, Outcome: c.State} // committed, abandoned, pending
			if c.State == "conflict" {
				v.Outcome = "refused (409)"
			}
			if c.FinishedAt != nil {
				v.Took = words.Duration(c.FinishedAt.Sub(c.StartedAt))
			}
			d.Items = append(d.Items, v)
		}
		base := "/tables/" + h.AssetID.String() + "/commits"
		if before != uuid.Nil {
			d.First = base
		}
		if more {
			d.Next = base + "?" + url.Values{"before": {recs[len(recs)-1].ID.String()}}.Encode()
		}
	}
	u.render(w, r, http.StatusOK, "writepath", "Commits · "+h.Name, d)
}

func (u *UI) inventoryPage(w http.ResponseWriter, r *http.Request) {
	h, err := u.writePathTable(r, "inventory")
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := inventoryPageData{writePathHead: h}
	if h.Served {
		after, err := cursorParam(r, "after")
		if err != nil {
			u.fail(w, r, err)
			return
		}
		f := warehouse.InventoryFilter{After: after, Limit: inventoryPage}
		if s := r.URL.Query().Get("snapshot"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "The snapshot must be a snapshot ID (a whole number)."})
				return
			}
			d.Snapshot, f.SnapshotID = &n, &n
		}
		files, more, err := u.cfg.Warehouse.Inventory(r.Context(), h.AssetID, f)
		if err != nil {
			u.fail(w, r, err)
			return
		}
		d.Files = len(files)
		for _, f := range files {
			n := len(d.Groups)
			if n == 0 || d.Groups[n-1].CommitID != f.CommitID || d.Groups[n-1].SnapshotID != f.SnapshotID {
				d.Groups = append(d.Groups, inventoryGroup{CommitID: f.CommitID, SnapshotID: f.SnapshotID, RecordedAt: f.RecordedAt})
				n++
			}
			g := &d.Groups[n-1]
			g.Files = append(g.Files, f)
			g.Bytes += f.Size
		}
		base := "/tables/" + h.AssetID.String() + "/inventory"
		q := url.Values{}
		if d.Snapshot != nil {
			q.Set("snapshot", strconv.FormatInt(*d.Snapshot, 10))
		}
		if after != uuid.Nil {
			d.First = base
			if len(q) > 0 {
				d.First += "?" + q.Encode()
			}
		}
		if more {
			q.Set("after", files[len(files)-1].ID.String())
			d.Next = base + "?" + q.Encode()
		}
	}
	u.render(w, r, http.StatusOK, "writepath", "Inventory · "+h.Name, d)
}

func (u *UI) snapshotsPage(w http.ResponseWriter, r *http.Request) {
	h, err := u.writePathTable(r, "snapshots")
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := snapshotsPageData{writePathHead: h, From: 1}
	if n, err := strconv.Atoi(r.URL.Query().Get("from")); err == nil && n > 1 {
		d.From = n
	}
	in, err := u.cfg.Tables.Inspection(r.Context(), h.AssetID)
	var de *catalog.Error
	switch {
	case errors.As(err, &de) && errors.Is(err, catalog.ErrNotFound):
		d.NotInspected = de.Message
	case err != nil:
		u.fail(w, r, err)
		return
	}
	d.Inspected = h.Table.RefreshedAt
	snaps := slices.Clone(in.Snapshots)
	slices.SortStableFunc(snaps, func(a, b tables.Snapshot) int { // newest first
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return int(b.SequenceNumber - a.SequenceNumber)
	})
	d.Total = len(snaps)
	if d.From > len(snaps) {
		d.From = max(1, len(snaps))
	}
	for _, s := range snaps[min(d.From-1, len(snaps)):min(d.From-1+snapshotsPage, len(snaps))] {
		d.Items = append(d.Items, snapshotView{Snapshot: s, AddedFiles: s.Summary["added-data-files"], DeletedFiles: s.Summary["deleted-data-files"],
			AddedRecords: s.Summary["added-records"], DeletedRecords: s.Summary["deleted-records"], TotalRecords: s.Summary["total-records"]})
	}
	page := func(from int) string {
		return "/tables/" + h.AssetID.String() + "/snapshots?" + url.Values{"from": {strconv.Itoa(from)}}.Encode()
	}
	if d.From > 1 {
		d.Prev = page(max(1, d.From-snapshotsPage))
	}
	if d.From-1+len(d.Items) < d.Total {
		d.Next = page(d.From + len(d.Items))
	}
	u.render(w, r, http.StatusOK, "writepath", "Snapshots · "+h.Name, d)
}

// cursorParam reads a page cursor (the last row's ID of the page before): a bad one is a 400.
func cursorParam(r *http.Request, name string) (uuid.UUID, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, &catalog.Error{Kind: catalog.ErrInvalid, Message: "The page link is damaged: start again from the first page."}
	}
	return id, nil
}
