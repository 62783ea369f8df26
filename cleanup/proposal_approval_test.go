package cleanup_test

import (
	"errors"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

func ptr[T any](v T) *T { return &v }

// TestApprovalNamesItsFiles: an orphan proposal lists exactly its files (path, size, the
// modification time the scans saw), paged; an approval must name their count and bytes.
func TestApprovalNamesItsFiles(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, cleanup.WithStopWindow(5*time.Minute))
		start := e.clock.Now()
		written := confirmOrphans(t, e, 3)
		e.propose()
		ps := e.proposals(cleanup.KindOrphanFiles, "open")
		if len(ps) != 1 {
			t.Fatalf("orphan proposals: %+v", ps)
		}
		id := ps[0].ID
		var got []cleanup.ProposalFile
		after := uuid.Nil
		for pages := 0; ; pages++ {
			page, err := e.svc.ProposalFiles(e.ctx, id, cleanup.FileFilter{After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				if pages != 2 {
					t.Fatalf("3 files in pages of 2 took %d pages", pages)
				}
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].ID
		}
		var names, want []string
		for _, w := range written {
			want = append(want, path.Base(w))
		}
		for _, f := range got {
			names = append(names, path.Base(f.Path))
			if f.State != "pending" || f.ModifiedAt == nil || f.ModifiedAt.Sub(start.Add(-100*time.Hour)).Abs() > 2*time.Second {
				t.Errorf("file %s: state %s, modified %v", f.Path, f.State, f.ModifiedAt)
			}
			if want := int64(100 + slices.Index(want, path.Base(f.Path))); f.Size != want {
				t.Errorf("file %s: size %d, want %d", f.Path, f.Size, want)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Fatalf("listed files %v, want %v", names, want)
		}
		p, err := e.svc.GetProposal(e.ctx, id)
		if err != nil || p.FileCount != 3 || p.FileBytes != 303 {
			t.Fatalf("totals: %d files %d bytes %v", p.FileCount, p.FileBytes, err)
		}
		for _, tc := range []struct {
			name         string
			files, bytes *int64
		}{
			{"NoConfirmation", nil, nil},
			{"CountOnly", ptr(int64(3)), nil},
			{"WrongCount", ptr(int64(2)), ptr(int64(303))},
			{"WrongBytes", ptr(int64(3)), ptr(int64(300))},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.svc.ApproveConfirmed(e.person("alice"), id, cleanup.Approval{Files: tc.files, Bytes: tc.bytes})
				if !errors.Is(err, catalog.ErrInvalid) {
					t.Fatalf("approval: %v", err)
				}
				if p, _ := e.svc.GetProposal(e.ctx, id); p.State != "open" {
					t.Fatalf("a refused approval left the proposal %s", p.State)
				}
			})
		}
		p, err = e.svc.ApproveConfirmed(e.person("alice"), id, cleanup.Approval{Files: ptr(int64(3)), Bytes: ptr(int64(303))})
		if err != nil || p.State != "approved" || p.DueAt == nil || !p.DueAt.Equal(p.DecidedAt.Add(5*time.Minute)) {
			t.Fatalf("confirmed approval: %+v %v", p, err)
		}
	})
}

// TestStopWindow: an approved proposal is not executed before its stop window passes (fake
// clock); cancelled inside it, nothing is ever deleted; after it, the journal says what
// happened to each file and when.
func TestStopWindow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel bool
	}{{"RunsAfterTheWindow", false}, {"CancelledInside", true}} {
		t.Run(tc.name, func(t *testing.T) {
			storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
				e := newEnv(t, db, cleanup.WithStopWindow(5*time.Minute))
				paths := confirmOrphans(t, e, 2)
				e.propose()
				id := e.proposals(cleanup.KindOrphanFiles, "open")[0].ID
				if _, err := e.svc.ApproveConfirmed(e.person("alice"), id, cleanup.Approval{Files: ptr(int64(2)), Bytes: ptr(int64(201))}); err != nil {
					t.Fatal(err)
				}
				for _, wait := range []time.Duration{0, 4*time.Minute + 59*time.Second} {
					e.clock.Set(e.clock.Now().Add(wait))
					r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
					if err != nil || r.Waiting != 1 || r.Deleted != 0 || !exists(paths[0]) || !exists(paths[1]) {
						t.Fatalf("execute %s after approval: %+v %v", wait, r, err)
					}
				}
				if tc.cancel {
					if _, err := e.svc.Cancel(catalog.WithActor(e.ctx, cleanup.BotActor), id, ""); !errors.Is(err, catalog.ErrInvalid) {
						t.Fatalf("the bot cancelled: %v", err)
					}
					p, err := e.svc.Cancel(e.person("bob"), id, "wrong table")
					if err != nil || p.State != "cancelled" || p.Reason != "cancelled by token:bob before execution: wrong table" {
						t.Fatalf("cancel: %+v %v", p, err)
					}
					if _, err := e.svc.Cancel(e.person("bob"), id, ""); !errors.Is(err, catalog.ErrConflict) {
						t.Fatalf("cancelling twice: %v", err)
					}
				}
				e.clock.Add(time.Hour)
				r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				p, _ := e.svc.GetProposal(e.ctx, id)
				files, err := e.svc.ProposalFiles(e.ctx, id, cleanup.FileFilter{})
				if err != nil || len(files) != 2 {
					t.Fatalf("journal: %+v %v", files, err)
				}
				if tc.cancel {
					if r.Deleted != 0 || !exists(paths[0]) || !exists(paths[1]) || p.State != "cancelled" {
						t.Fatalf("after a cancel: %+v, proposal %s", r, p.State)
					}
					for _, f := range files {
						if f.State != cleanup.FileNotDeleted || f.Detail != "not deleted (approval cancelled)" || f.DoneAt != nil {
							t.Fatalf("a cancelled proposal's file reads %+v, want not deleted (approval cancelled)", f)
						}
					}
					if _, err := e.svc.Cancel(e.person("bob"), id, ""); !errors.Is(err, catalog.ErrConflict) {
						t.Fatalf("cancel after the window: %v", err)
					}
					// The cancel holds like a rejection: the next round does not propose the
					// same files again; a new orphan beyond them is proposed alone.
					e.propose()
					if open := e.proposals(cleanup.KindOrphanFiles, "open"); len(open) != 0 {
						t.Fatalf("the bot proposed the cancelled files again: %+v", open)
					}
					confirmOrphans(t, e, 3) // orphan-a and -b again, and orphan-c
					e.propose()
					open := e.proposals(cleanup.KindOrphanFiles, "open")
					if len(open) != 1 {
						t.Fatalf("after a third orphan: %d open proposals, want 1", len(open))
					}
					listed, err := e.svc.ProposalFiles(e.ctx, open[0].ID, cleanup.FileFilter{})
					if err != nil || len(listed) != 1 || !strings.HasSuffix(listed[0].Path, "/orphan-c.parquet") {
						t.Fatalf("the reopened proposal lists %+v (err %v), want only the new orphan", listed, err)
					}
					return
				}
				if r.Deleted != 2 || exists(paths[0]) || exists(paths[1]) || p.State != "executed" {
					t.Fatalf("after the window: %+v, proposal %s", r, p.State)
				}
				for _, f := range files {
					if f.State != "deleted" || f.DoneAt == nil || !f.DoneAt.Equal(e.clock.Now().Truncate(time.Microsecond)) {
						t.Fatalf("journal entry: %+v", f)
					}
				}
				if _, err := e.svc.Cancel(e.person("bob"), id, ""); !errors.Is(err, catalog.ErrConflict) {
					t.Fatalf("cancel after execution: %v", err)
				}
			})
		})
	}
}
