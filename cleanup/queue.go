package cleanup

// The proposal queue a team works through: proposals with their listed files' count, bytes,
// storage cost and oldest file, sorted and paged; the totals over everything a filter matches;
// and a decision over a selection, checked against the totals the person confirmed.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/sqltime"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/internal/words"
)

// MaxSelection is how many proposals one decision over a selection may cover: enough for a
// morning's queue, few enough that a person can read the list they confirm.
const MaxSelection = 100

// Queue sort keys (the columns that sort).
const (
	SortOpened = "opened"
	SortFiles  = "files"
	SortBytes  = "bytes"
	SortCost   = "cost"
	SortOldest = "oldest"
)

var queueSorts = []string{SortOpened, SortFiles, SortBytes, SortCost, SortOldest}

// QueueQuery selects a page of the queue.
type QueueQuery struct {
	State, Kind string
	Sort        string // one of the Sort constants; "" is SortOpened
	Order       string // "asc" or "desc"; "" is "desc"
	Offset      int
	Limit       int
}

// QueueRow is a proposal with what its file list adds up to.
type QueueRow struct {
	Proposal
	Files       int64
	Bytes       int64
	MonthlyCost float64    // the listed bytes' storage a month at the storage price
	OldestFile  *time.Time // the oldest listed file's modification time; nil without a list
}

// QueueTotals sums what a filter or a selection matches.
type QueueTotals struct {
	Proposals   int64
	Files       int64
	Bytes       int64
	MonthlyCost float64
}

// StorageGBMonth is the storage price the queue's costs use (the one the proposals' evidence
// uses too).
func (s *Service) StorageGBMonth() float64 { return s.prices.StorageGBMonth }

func (s *Service) monthly(bytes int64) float64 { return float64(bytes) / 1e9 * s.prices.StorageGBMonth }

// CheckQueueSort says whether sort and order are values the queue sorts by.
func CheckQueueSort(sort, order string) error {
	if sort != "" && !slices.Contains(queueSorts, sort) {
		return &catalog.Error{Kind: catalog.ErrInvalid, Field: "sort", Message: fmt.Sprintf("sort %q is not one of %s", sort, strings.Join(queueSorts, ", "))}
	}
	if order != "" && order != "asc" && order != "desc" {
		return &catalog.Error{Kind: catalog.ErrInvalid, Field: "order", Message: fmt.Sprintf("order %q is not asc or desc", order)}
	}
	return nil
}

// queueWhere is the filter as SQL over proposals p, validated as Proposals validates it.
func queueWhere(state, kind string) (string, []any, error) {
	var conds []string
	var args []any
	if state != "" {
		if err := proposal.StateValidator(proposal.State(state)); err != nil {
			return "", nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "state", Message: fmt.Sprintf("state %q is not one of open, approved, executing, executed, failed, stopped, rejected, withdrawn, expired, cancelled", state)}
		}
		args = append(args, state)
		conds = append(conds, fmt.Sprintf("p.state = $%d", len(args)))
	}
	if kind != "" {
		if err := proposal.KindValidator(proposal.Kind(kind)); err != nil {
			return "", nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "kind", Message: fmt.Sprintf("kind %q is not one of orphan_files, unused_asset, expire_snapshots, purge, dangling_reference, shared_location", kind)}
		}
		args = append(args, kind)
		conds = append(conds, fmt.Sprintf("p.kind = $%d", len(args)))
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// QueueTotals counts the proposals a filter matches (every one, not a page), their listed
// files and bytes, and what those bytes cost a month, in one aggregate query.
func (s *Service) QueueTotals(ctx context.Context, state, kind string) (QueueTotals, error) {
	where, args, err := queueWhere(state, kind)
	if err != nil {
		return QueueTotals{}, err
	}
	var t QueueTotals
	row, err := s.db.QueryContext(ctx, `SELECT COUNT(DISTINCT p.id), COUNT(f.id), COALESCE(SUM(f.size), 0)
FROM proposals p LEFT JOIN proposal_files f ON f.proposal_id = p.id`+where, args...)
	if err != nil {
		return t, fmt.Errorf("cleanup: queue totals: %w", err)
	}
	defer row.Close()
	if row.Next() {
		if err := row.Scan(&t.Proposals, &t.Files, &t.Bytes); err != nil {
			return t, fmt.Errorf("cleanup: queue totals: %w", err)
		}
	}
	if err := row.Err(); err != nil {
		return t, fmt.Errorf("cleanup: queue totals: %w", err)
	}
	t.MonthlyCost = s.monthly(t.Bytes)
	return t, nil
}

// queueKey is what the queue sorts a proposal by.
type queueKey struct {
	id           uuid.UUID
	opened       time.Time
	files, bytes int64
	oldest       *time.Time
}

// keys reads every matching proposal's sort keys, one aggregate row each; where is "" or a
// WHERE clause over proposals p.
func (s *Service) keys(ctx context.Context, where string, args []any) ([]queueKey, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT p.id, p.created_at, COUNT(f.id), COALESCE(SUM(f.size), 0), MIN(f.modified_at)
FROM proposals p LEFT JOIN proposal_files f ON f.proposal_id = p.id`+where+` GROUP BY p.id, p.created_at`, args...)
	if err != nil {
		return nil, fmt.Errorf("cleanup: queue: %w", err)
	}
	defer rows.Close()
	var out []queueKey
	for rows.Next() {
		var k queueKey
		var oldest sqltime.Time
		if err := rows.Scan(&k.id, &k.opened, &k.files, &k.bytes, &oldest); err != nil {
			return nil, fmt.Errorf("cleanup: queue: %w", err)
		}
		if !oldest.T.IsZero() {
			k.oldest = &oldest.T
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cleanup: queue: %w", err)
	}
	return out, nil
}

// less orders two keys by the sort column, ascending, ties broken by ID so that a page never
// repeats or skips a proposal. A proposal without a list has no oldest file: it sorts as newest.
func (k queueKey) less(o queueKey, by string) int {
	c := 0
	switch by {
	case SortFiles:
		c = cmp64(k.files, o.files)
	case SortBytes, SortCost:
		c = cmp64(k.bytes, o.bytes)
	case SortOldest:
		switch {
		case k.oldest == nil && o.oldest == nil:
		case k.oldest == nil:
			c = 1
		case o.oldest == nil:
			c = -1
		default:
			c = k.oldest.Compare(*o.oldest)
		}
	default:
		c = k.opened.Compare(o.opened)
	}
	if c == 0 {
		c = strings.Compare(k.id.String(), o.id.String())
	}
	return c
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Queue returns a page of the proposals a filter matches, sorted by the query's column with
// the ID as tie-breaker, and whether more follow. It reads every match's sort keys (one small
// row each) and then the page's proposals.
func (s *Service) Queue(ctx context.Context, q QueueQuery) ([]QueueRow, bool, error) {
	if err := CheckQueueSort(q.Sort, q.Order); err != nil {
		return nil, false, err
	}
	where, args, err := queueWhere(q.State, q.Kind)
	if err != nil {
		return nil, false, err
	}
	keys, err := s.keys(ctx, where, args)
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(keys, func(a, b queueKey) int {
		if q.Order == "asc" {
			return a.less(b, q.Sort)
		}
		return b.less(a, q.Sort)
	})
	if q.Offset > len(keys) {
		q.Offset = len(keys)
	}
	keys = keys[q.Offset:]
	more := q.Limit > 0 && len(keys) > q.Limit
	if more {
		keys = keys[:q.Limit]
	}
	rows, err := s.queueRows(ctx, keys)
	return rows, more, err
}

// queueRows reads the proposals of keys, in their order.
func (s *Service) queueRows(ctx context.Context, keys []queueKey) ([]QueueRow, error) {
	ids := make([]uuid.UUID, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	ps, err := s.db.Proposal.Query().Where(proposal.IDIn(ids...)).All(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]*ent.Proposal, len(ps))
	for _, p := range ps {
		byID[p.ID] = p
	}
	out := make([]QueueRow, 0, len(keys))
	for _, k := range keys {
		r, ok := byID[k.id]
		if !ok {
			continue // deleted in between: proposals are not deleted, but a page need not fail on it
		}
		p, err := toProposal(r)
		if err != nil {
			return nil, err
		}
		p.FileCount, p.FileBytes = k.files, k.bytes
		out = append(out, QueueRow{Proposal: p, Files: k.files, Bytes: k.bytes, MonthlyCost: s.monthly(k.bytes), OldestFile: k.oldest})
	}
	return out, nil
}

// Selected reads a selection afresh: each proposal with its listed files' totals, and the
// selection's totals, in the order given. A selection names 1 to MaxSelection proposals, each
// once, each one that exists.
func (s *Service) Selected(ctx context.Context, ids []uuid.UUID) ([]QueueRow, QueueTotals, error) {
	var t QueueTotals
	switch {
	case len(ids) == 0:
		return nil, t, &catalog.Error{Kind: catalog.ErrInvalid, Field: "id", Message: "select at least one proposal"}
	case len(ids) > MaxSelection:
		return nil, t, &catalog.Error{Kind: catalog.ErrInvalid, Field: "id", Message: fmt.Sprintf(
			"%d proposals are selected, but one decision covers at most %d: select fewer", len(ids), MaxSelection)}
	}
	seen := make(map[uuid.UUID]bool, len(ids))
	var ph []string
	var args []any
	for _, id := range ids {
		if seen[id] {
			return nil, t, &catalog.Error{Kind: catalog.ErrInvalid, Field: "id", Message: fmt.Sprintf("proposal %s is selected twice", id)}
		}
		seen[id] = true
		args = append(args, id)
		ph = append(ph, fmt.Sprintf("$%d", len(args)))
	}
	keys, err := s.keys(ctx, " WHERE p.id IN ("+strings.Join(ph, ", ")+")", args)
	if err != nil {
		return nil, t, err
	}
	order := make(map[uuid.UUID]int, len(ids))
	for i, id := range ids {
		order[id] = i
	}
	slices.SortFunc(keys, func(a, b queueKey) int { return order[a.id] - order[b.id] })
	rows, err := s.queueRows(ctx, keys)
	if err != nil {
		return nil, t, err
	}
	if len(rows) != len(ids) {
		for _, id := range ids {
			if !slices.ContainsFunc(rows, func(r QueueRow) bool { return r.ID == id }) {
				return nil, t, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("no proposal %s", id)}
			}
		}
	}
	for _, r := range rows {
		t.Proposals++
		t.Files += r.Files
		t.Bytes += r.Bytes
	}
	t.MonthlyCost = s.monthly(t.Bytes)
	return rows, t, nil
}

// SelectionDecision is one decision over a selection: what the person saw (each proposal's
// version) and typed (the selection's total files and bytes).
type SelectionDecision struct {
	IDs      []uuid.UUID
	Versions []int64 // Versions[i] is the version of IDs[i] the person was shown
	Approve  bool    // approve every one; otherwise reject every one
	Reason   string  // the approval's note, or the rejection's reason (required)
	Files    int64   // typed: the selection's total listed files
	Bytes    int64   // typed: the selection's total listed bytes
}

// DecideSelection decides every proposal of a selection, each through the call a single
// decision uses (ApproveConfirmed or Reject: the same checks, audit and stop window), after
// reading the selection afresh. It decides nothing when a proposal is no longer open or changed
// since it was shown, when an approval would include a kind Tidemark never executes, or when the
// typed totals are not the selection's. Each decision is its own transaction: if one fails
// (another person decided it that instant), the ones before it stand, and the error says which.
func (s *Service) DecideSelection(ctx context.Context, d SelectionDecision) ([]Proposal, error) {
	if len(d.Versions) != len(d.IDs) {
		return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "version", Message: "each selected proposal needs the version that was shown"}
	}
	if !d.Approve && strings.TrimSpace(d.Reason) == "" {
		return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "reason", Message: "a rejection needs a reason: say why, so the bot's owners can tune it"}
	}
	rows, t, err := s.Selected(ctx, d.IDs)
	if err != nil {
		return nil, err
	}
	for i, r := range rows {
		switch {
		case r.State != string(proposal.StateOpen):
			return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "id", Message: fmt.Sprintf(
				"proposal %s is %s, no longer open: nothing was decided; select again", r.ID, r.State)}
		case r.Version != d.Versions[i]:
			return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "version", Message: fmt.Sprintf(
				"proposal %s changed since the confirmation page was shown: nothing was decided; select again", r.ID)}
		case d.Approve && !r.Executable:
			return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "id", Message: fmt.Sprintf(
				"proposal %s is a %s proposal, which Tidemark never executes: nothing was decided; leave it out of an approval", r.ID, r.Kind)}
		}
	}
	if d.Files != t.Files || d.Bytes != t.Bytes {
		return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "confirm_files", Message: fmt.Sprintf(
			"you typed %s and %s, but the selection lists %s and %s: nothing was decided; type the totals shown",
			words.Count(d.Files, "file"), words.Count(d.Bytes, "byte"), words.Count(t.Files, "file"), words.Count(t.Bytes, "byte"))}
	}
	out := make([]Proposal, 0, len(rows))
	for _, r := range rows {
		var p Proposal
		if d.Approve {
			files, bytes := r.Files, r.Bytes
			p, err = s.ApproveConfirmed(ctx, r.ID, Approval{Note: d.Reason, Files: &files, Bytes: &bytes})
		} else {
			p, err = s.Reject(ctx, r.ID, d.Reason)
		}
		if err != nil {
			var de *catalog.Error
			if !errors.As(err, &de) {
				return out, fmt.Errorf("cleanup: %d of %d selected proposals decided, then proposal %s: %w", len(out), len(rows), r.ID, err)
			}
			return out, &catalog.Error{Kind: de.Kind, Field: de.Field, Message: fmt.Sprintf(
				"%s of %d decided; then proposal %s: %s", words.Count(int64(len(out)), "proposal"), len(rows), r.ID, de.Message)}
		}
		out = append(out, p)
	}
	return out, nil
}
