// Package reconcile owns dataset migrations: an old asset moving to a new one (by ID), the
// reconciliation runs that compare the two sides from day one (counts per time window, an
// order-independent checksum per window, a deep comparison of differing records), the
// classification of every difference as lag, duplication, moved or divergence (and of any figure
// no key-level difference explains), the findings that stay open until a run shows them gone,
// the deploys a streak must span, the streak of clean runs that gates cutover, and the final
// reconciliation against the old side's archive that gates retirement (seed 003).
package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/internal/words"
)

// DedupRule says which record stands for a key that appears more than once on one side. It is
// stated per dataset, never assumed.
type DedupRule string

// Dedup rules.
const (
	FirstWins DedupRule = "first_wins" // the earliest record by the time column
	LastWins  DedupRule = "last_wins"  // the latest
	Merge     DedupRule = "merge"      // per column, the latest non-null value
)

// KeyRule says what a repeated key on one side is.
type KeyRule string

// Key rules.
const (
	// UniqueKeys: a key stands for one record; any repeat, in one window or across windows, is
	// duplication. The default: it never calls a repeat clean.
	UniqueKeys KeyRule = "unique"
	// HistoryKeys: the side keeps versions of a key (an SCD table, an append-only status log);
	// the dedup rule collapses them and only the same record twice (time and values) is
	// duplication.
	HistoryKeys KeyRule = "history"
)

// SourceKind says how Tidemark reads one side.
type SourceKind string

// Source kinds.
const (
	SourcePostgres SourceKind = "postgres" // SQL over a configured read-only connection
	SourceIceberg  SourceKind = "iceberg"  // the side's asset is a registered Iceberg table
	SourceExternal SourceKind = "external" // a checker posts the figures through the API
)

// SourceSpec is how one side is read.
type SourceSpec struct {
	Kind SourceKind `json:"kind"`
	// Connection names a configured PostgreSQL connection; Table is schema.table there.
	Connection string `json:"connection,omitempty"`
	Table      string `json:"table,omitempty"`
	// ChangeLog names the change log installed on Table (schema.table, see ChangeLogSQL): a run
	// then reads again only the windows a transaction changed since the previous run.
	ChangeLog string `json:"change_log,omitempty"`
	// Keys says whether the side's keys are unique or carry history (unique when not stated).
	Keys KeyRule `json:"keys,omitempty"`
	// AssetID and SnapshotID name an Iceberg archive (the final reconciliation's old side): a
	// registered table other than the two sides, at one snapshot or at its current one.
	AssetID    *uuid.UUID `json:"asset_id,omitempty"`
	SnapshotID *int64     `json:"snapshot_id,omitempty"`
}

// CutoverRule is when the streak of clean runs makes the move safe to cut over. A day the
// streak must span (a weekend day, the busiest write day, a deploy's day) counts only once a
// clean run of the streak started after that day ended (so it compared the whole day) and the
// streak had begun before the day ended.
type CutoverRule struct {
	MinCleanRuns int `json:"min_clean_runs"`
	MinDays      int `json:"min_days"` // from the streak's first clean run to its last
	// IncludeWeekend: the streak spans a Saturday or a Sunday (UTC).
	IncludeWeekend bool `json:"include_weekend"`
	// IncludeBusiestDay: the streak spans the new asset's busiest write day of the last
	// PeakPeriod (an older peak cannot lock the gate).
	IncludeBusiestDay bool `json:"include_busiest_day"`
	// IncludeDeploy: the streak spans a recorded deploy of the new side's writer.
	IncludeDeploy bool `json:"include_deploy"`
	// WeakerReason is why this migration may cut over on a streak shorter than the floor
	// (FloorCleanRuns runs over FloorDays days); without one such a rule is refused.
	WeakerReason string `json:"weaker_reason,omitempty"`
}

// The floor of a cutover rule: a streak shorter than this proves little (the seed's "reconcile
// once the night before cutover" is what it rules out), so a weaker rule needs a stated reason.
const (
	FloorCleanRuns = 3
	FloorDays      = 7
)

// weaker reports whether the rule asks less than the floor.
func (r CutoverRule) weaker() bool { return r.MinCleanRuns < FloorCleanRuns || r.MinDays < FloorDays }

// Spec is what a migration compares and how.
type Spec struct {
	KeyColumns []string `json:"key_columns"`
	TimeColumn string   `json:"time_column"`
	// Columns are compared besides the keys (the checksums and the deep comparison).
	Columns         []string    `json:"columns"`
	WindowSeconds   int64       `json:"window_seconds"`
	Since           time.Time   `json:"since"` // the first window compared
	DedupOld        DedupRule   `json:"dedup_old"`
	DedupNew        DedupRule   `json:"dedup_new"`
	LagBoundSeconds int64       `json:"lag_bound_seconds"`
	Cutover         CutoverRule `json:"cutover"`
	SampleSize      int         `json:"sample_size"` // differing records compared column by column
	// QuoteValues keeps the sampled differing values in run results (they are data: anyone who
	// may read the catalog reads them); without it a sample names the key and the column only.
	QuoteValues bool `json:"quote_values"`
	// Checker names the token that posts an external side's figures (besides admins); without
	// one only an admin may post them.
	Checker string     `json:"checker_token,omitempty"`
	Old     SourceSpec `json:"old"`
	New     SourceSpec `json:"new"`
	// hashing is how a run hashes each column, set before its first pass (hashing.go).
	hashing hashPlan
}

// Window is the comparison window.
func (s Spec) Window() time.Duration { return time.Duration(s.WindowSeconds) * time.Second }

// LagBound is how far behind the new side may be in the newest windows.
func (s Spec) LagBound() time.Duration { return time.Duration(s.LagBoundSeconds) * time.Second }

// windowsUntil is how many windows the span from since to now holds.
func (s Spec) windowsUntil(now time.Time) int64 {
	if !now.After(s.Since) {
		return 0
	}
	w := s.Window()
	return int64((now.Sub(s.Since) + w - 1) / w)
}

// Bounds on a spec's time fields, so window arithmetic never saturates (time.Duration spans
// about 292 years) and a spec cannot claim a span it never compared.
var earliestSince = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	maxWindowSeconds = 366 * 24 * 3600
	maxColumns       = 200
)

// DefaultSampleSize is how many differing records a run compares column by column.
const DefaultSampleSize = 100

func invalid(field, format string, args ...any) error {
	return &catalog.Error{Kind: catalog.ErrInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// check refuses a spec that states less than a comparison needs, saying what to add: every
// problem at once (errors.Join of catalog.Errors, the first one first), so a person fixes a form
// in one go. now bounds since: a future start compares nothing and a span of more than
// MaxWindows windows is refused.
func (s *Spec) check(now time.Time) error {
	var problems []error
	add := func(err error) { problems = append(problems, err) }
	if len(s.KeyColumns) == 0 {
		add(invalid("key_columns", "name the key columns that identify a record on both sides"))
	}
	if s.TimeColumn == "" {
		add(invalid("time_column", "name the time column that places a record in a window"))
	}
	if len(s.Columns) == 0 {
		add(invalid("columns", "name the columns to compare besides the keys"))
	}
	all := slices.Clone(s.KeyColumns)
	if s.TimeColumn != "" { // a missing one is said above
		all = append(all, s.TimeColumn)
	}
	all = append(all, s.Columns...)
	if len(all) > maxColumns {
		add(invalid("columns", "compare at most %d columns, keys and time column included, not %d", maxColumns, len(all)))
	}
	for _, c := range all {
		if strings.TrimSpace(c) == "" || len(c) > 128 {
			add(invalid("columns", "column names must be 1 to 128 characters, not %q", c))
		}
	}
	if s.TimeColumn != "" && slices.Contains(s.KeyColumns, s.TimeColumn) {
		add(invalid("time_column", "the time column %q is also a key column; name it once", s.TimeColumn))
	}
	windowOK := s.WindowSeconds >= 60 && s.WindowSeconds <= maxWindowSeconds
	if !windowOK {
		add(invalid("window_seconds", "the window must be from 60 seconds to 366 days, not %d seconds", s.WindowSeconds))
	}
	sinceOK := false
	switch {
	case s.Since.IsZero():
		add(invalid("since", "say from when to compare (the first window's start)"))
	case s.Since.Before(earliestSince):
		add(invalid("since", "since must be %s or later, not %s", earliestSince.Format(time.DateOnly), s.Since.UTC().Format(time.RFC3339)))
	case s.Since.After(now):
		add(invalid("since", "since %s is in the future: a run would compare nothing; start from a time data was written",
			s.Since.UTC().Format(time.RFC3339)))
	default:
		sinceOK = true
	}
	s.Since = s.Since.UTC()
	if windowOK && sinceOK {
		if n := s.windowsUntil(now); n > MaxWindows {
			add(invalid("window_seconds", "from %s to now is %d windows of %s, more than %d: widen the window or start later",
				s.Since.Format(time.RFC3339), n, words.Duration(s.Window()), MaxWindows))
		}
	}
	for _, r := range []struct {
		field string
		rule  DedupRule
	}{{"dedup_old", s.DedupOld}, {"dedup_new", s.DedupNew}} {
		if r.rule != FirstWins && r.rule != LastWins && r.rule != Merge {
			add(invalid(r.field, "state the dedup rule: first_wins, last_wins or merge, not %q (it is never assumed)", r.rule))
		}
	}
	if s.LagBoundSeconds < 0 {
		add(invalid("lag_bound_seconds", "the lag bound must not be negative"))
	}
	if s.Cutover.MinCleanRuns < 1 || s.Cutover.MinDays < 0 {
		add(invalid("cutover", "the cutover rule needs at least 1 clean run and a day count of 0 or more"))
	}
	s.Cutover.WeakerReason = strings.TrimSpace(s.Cutover.WeakerReason)
	if s.Cutover.weaker() && s.Cutover.WeakerReason == "" {
		add(invalid("cutover", "a streak of %d clean runs over %d days is weaker than the floor of %d runs over %d days: ask for more, or state why this migration may cut over on less (weaker_reason)",
			s.Cutover.MinCleanRuns, s.Cutover.MinDays, FloorCleanRuns, FloorDays))
	}
	if len(s.Cutover.WeakerReason) > 1000 {
		add(invalid("cutover", "state the weaker_reason in at most 1000 bytes"))
	}
	if s.SampleSize == 0 {
		s.SampleSize = DefaultSampleSize
	}
	if s.SampleSize < 0 || s.SampleSize > 10_000 {
		add(invalid("sample_size", "the sample size must be from 1 to 10000, not %d", s.SampleSize))
	}
	for _, side := range []struct {
		field string
		src   *SourceSpec
	}{{"old", &s.Old}, {"new", &s.New}} {
		switch side.src.Keys {
		case "":
			side.src.Keys = UniqueKeys
		case UniqueKeys, HistoryKeys:
		default:
			add(invalid(side.field, "the %s side's keys must be unique or history, not %q", side.field, side.src.Keys))
		}
		switch side.src.Kind {
		case SourcePostgres:
			if side.src.Connection == "" || side.src.Table == "" {
				add(invalid(side.field, "a postgres side needs a connection name and a schema.table"))
			}
			if l := side.src.ChangeLog; l != "" && (strings.Count(l, ".") != 1 || strings.HasPrefix(l, ".") || strings.HasSuffix(l, ".") || len(l) > 128) {
				add(invalid(side.field, "name the %s side's change log as schema.table (at most 128 characters), not %q", side.field, l))
			}
		case SourceIceberg, SourceExternal:
			if side.src.ChangeLog != "" {
				add(invalid(side.field, "a change log is for a postgres side; the %s side is %s", side.field, side.src.Kind))
			}
		default:
			add(invalid(side.field, "the %s side's kind must be postgres, iceberg or external, not %q", side.field, side.src.Kind))
		}
	}
	external := s.Old.Kind == SourceExternal || s.New.Kind == SourceExternal
	if s.Checker != "" && !external {
		add(invalid("checker_token", "checker_token is for a side an external checker reads; both sides here are Tidemark's"))
	}
	if len(s.Checker) > 128 {
		add(invalid("checker_token", "name the checker's token in at most 128 characters"))
	}
	return errors.Join(problems...)
}

// describe says in words what a side reads, for the audit log (never a DSN: connections are
// named).
func (s SourceSpec) describe() string {
	switch {
	case s.Connection != "":
		return fmt.Sprintf("%s table %s on connection %s", s.Kind, s.Table, s.Connection)
	case s.AssetID != nil && s.SnapshotID != nil:
		return fmt.Sprintf("%s asset %s at snapshot %d", s.Kind, s.AssetID, *s.SnapshotID)
	case s.AssetID != nil:
		return fmt.Sprintf("%s asset %s", s.Kind, s.AssetID)
	}
	return string(s.Kind)
}
