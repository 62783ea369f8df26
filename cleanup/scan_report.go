package cleanup

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Report is what one scan examined and found. Its wording never claims the table is clean or
// the result complete: a walk over a live store is evidence, and reconciliation converges.
type Report struct {
	ScanID            uuid.UUID  `json:"scan_id"`
	AssetID           uuid.UUID  `json:"asset_id"`
	Location          string     `json:"location"`
	MetadataLocation  string     `json:"metadata_location"`
	StartedAt         time.Time  `json:"started_at"`
	FinishedAt        *time.Time `json:"finished_at,omitempty"`
	State             string     `json:"state"`
	Error             string     `json:"error,omitempty"`
	AgeThreshold      string     `json:"age_threshold"`
	ThresholdOverride bool       `json:"threshold_override"`
	Assumption        string     `json:"assumption"`
	Planned           []string   `json:"planned_shards"` // what the scan set out to walk
	// ConfirmOnly: a confirming pass, which walked only the shards with files to confirm;
	// NothingToConfirm counts the shards walked before that it left alone (no candidate there).
	ConfirmOnly      bool `json:"confirm_only"`
	NothingToConfirm int  `json:"nothing_to_confirm_shards"`
	// FromInventory: an inventory pass, which listed nothing. SettledByInventory counts the
	// files the write-path inventory settled (staged by commits that did not happen; of them,
	// StagedThenCommitted were added by a later commit and are not candidates, LeftoversGone were
	// already gone); in a walk, the unreferenced files it left to inventory passes for that
	// reason. SettledByWalk counts the distinct entries walks listed and judged.
	FromInventory       bool  `json:"from_inventory"`
	SettledByInventory  int64 `json:"settled_by_inventory"`
	SettledByWalk       int64 `json:"settled_by_walk"`
	StagedThenCommitted int64 `json:"staged_then_committed,omitempty"`
	LeftoversGone       int64 `json:"leftovers_gone,omitempty"`
	// Unrecorded: for a walk of a served table, the candidates its inventory did not know as
	// leftovers, which only a walk finds (nil for tables Tidemark does not serve).
	Unrecorded *int64 `json:"unrecorded_candidates,omitempty"`
	// ReferencesReused: no table here committed during the walk (each was still at the
	// metadata file read before it), so the references read before the walk stood for after.
	ReferencesReused bool          `json:"references_reused"`
	Shards           []ShardReport `json:"shards"`
	ShardsComplete   int           `json:"shards_complete"`
	ShardsFailed     int           `json:"shards_failed"`      // failed, unreachable, stopped or leased to another worker
	ShardsNotReached int           `json:"shards_not_reached"` // planned, but the scan stopped before their turn
	// Holes are shards this scan did not walk to completion: nothing in them was confirmed.
	Holes           []Hole   `json:"holes"`
	EntriesListed   int64    `json:"entries_listed"`   // distinct paths listed
	DuplicateListed int64    `json:"duplicate_listed"` // entries a listing returned more than once
	ReferencedFiles int64    `json:"referenced_files"` // paths the metadata referenced after the walk
	MidWalk         int64    `json:"mid_walk"`         // unreferenced before the walk, referenced after it
	TooYoung        int64    `json:"too_young"`        // unreferenced but younger than the threshold
	Candidates      int64    `json:"candidates"`       // unreferenced and old enough, in complete shards
	CandidateBytes  int64    `json:"candidate_bytes"`
	Confirmed       int64    `json:"confirmed"` // candidates a second consecutive complete walk agreed on
	ConfirmedBytes  int64    `json:"confirmed_bytes"`
	ConfirmedSample []string `json:"confirmed_sample"` // up to 100 paths
	// NewlyConfirmedBytes are the confirmed bytes this scan confirmed for the first time: the
	// orphans that grew since the scan before (PreviousStartedAt), which the cadence weighs.
	NewlyConfirmedBytes int64          `json:"newly_confirmed_bytes"`
	PreviousStartedAt   *time.Time     `json:"previous_started_at,omitempty"`
	Cadence             *CadenceAdvice `json:"cadence,omitempty"`
	Requests            Requests       `json:"requests"`
	Cost                Cost           `json:"cost"`
	Summary             string         `json:"summary"`
	Prices              Prices         `json:"prices"`
	// MinGap is how far apart two walks must be to confirm; TooSoonShards counts walks of this
	// scan that came sooner and so confirmed nothing.
	MinGap        string `json:"min_gap"`
	TooSoonShards int    `json:"too_soon_shards"`
	Pacing        Pacing `json:"pacing"`
	// SharedWith are the other known tables whose location overlaps this one: what they
	// reference counted as referenced. Foreign are metadata files of tables nobody told
	// Tidemark about: while there are any, nothing in the location is confirmed.
	SharedWith []SharedTable   `json:"shared_with"`
	Foreign    []ForeignTenant `json:"foreign_tenants"`
}

// CadenceAdvice weighs a scan's request cost against the storage cost of the orphans that grow
// between scans. With orphans growing g bytes a day, found and deleted every T days, a cycle
// costs one scan (C) plus the orphans' storage while they wait (price a byte-day p: p*g*T*T/2);
// the daily cost C/T + p*g*T/2 is lowest, and the two parts equal, at T = sqrt(2C/(p*g)): the
// break-even cadence. Scanning more often spends more on requests than it saves in storage.
type CadenceAdvice struct {
	ScanCostUSD         float64 `json:"scan_cost_usd"`
	NewlyConfirmedBytes int64   `json:"newly_confirmed_bytes"`
	DaysSincePrevious   float64 `json:"days_since_previous_scan"`
	GrowthBytesPerDay   float64 `json:"orphan_growth_bytes_per_day"`
	// GrowthUSDPerMonth is what one day's new orphans cost to store for a month.
	GrowthUSDPerMonth float64 `json:"orphan_growth_usd_per_month_per_day"`
	BreakEven         string  `json:"break_even_cadence,omitempty"` // empty when orphans did not grow
	BreakEvenSeconds  int64   `json:"break_even_seconds,omitempty"`
	Explanation       string  `json:"explanation"`
}

// cadence computes the advice from a finished scan's figures, or nil without a scan before.
func (r *Report) cadence(p Prices) *CadenceAdvice {
	if r.PreviousStartedAt == nil || r.State != "finished" {
		return nil
	}
	days := r.StartedAt.Sub(*r.PreviousStartedAt).Hours() / 24
	if days <= 0 {
		return nil
	}
	a := &CadenceAdvice{ScanCostUSD: r.Cost.Scan, NewlyConfirmedBytes: r.NewlyConfirmedBytes, DaysSincePrevious: days,
		GrowthBytesPerDay: float64(r.NewlyConfirmedBytes) / days}
	a.GrowthUSDPerMonth = a.GrowthBytesPerDay / 1e9 * p.StorageGBMonth
	perByteDay := p.StorageGBMonth / 1e9 / 30
	if a.GrowthBytesPerDay <= 0 || perByteDay <= 0 {
		a.Explanation = fmt.Sprintf("No orphan was newly confirmed in the %.1f days since the scan before: storage does not pay for scanning more often; the longest allowed interval suffices.", days)
		return a
	}
	t := math.Sqrt(2 * a.ScanCostUSD / (perByteDay * a.GrowthBytesPerDay)) // days
	d := time.Duration(t * 24 * float64(time.Hour)).Round(time.Minute)
	a.BreakEven, a.BreakEvenSeconds = d.String(), int64(d/time.Second)
	a.Explanation = fmt.Sprintf("Orphans grew %s a day (%s newly confirmed over %.1f days), adding $%.6f a month of storage each day; a scan costs $%.6f in requests. Scanning every %s balances the two (daily cost = scan cost / interval + storage of the waiting orphans); more often costs more in requests than it saves.",
		BytesText(int64(a.GrowthBytesPerDay)), BytesText(a.NewlyConfirmedBytes), days, a.GrowthUSDPerMonth, a.ScanCostUSD, d)
	return a
}

// outcomeNotReached is the outcome of a planned shard a stopped scan never began.
const outcomeNotReached = "not_reached"

// Pacing is the storage request pacing a scan or execution ran with (0: unlimited).
type Pacing struct {
	ListPerSecond float64 `json:"list_per_second"`
	HeadPerSecond float64 `json:"head_per_second"`
	PageSize      int     `json:"page_size"`
	HeadParallel  int     `json:"head_parallel"`
	ShardParallel int     `json:"shard_parallel"` // shards walked at once
}

// ShardReport is one shard walk.
type ShardReport struct {
	Shard        string     `json:"shard"`
	Outcome      string     `json:"outcome"`            // complete, failed, unreachable, stopped, leased, not_reached
	TooSoon      bool       `json:"too_soon,omitempty"` // complete, but too soon after the previous walk to confirm
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	Entries      int64      `json:"entries"`
	Duplicates   int64      `json:"duplicates"`
	ListRequests int64      `json:"list_requests"`
	Candidates   int64      `json:"candidates"`
	Confirmed    int64      `json:"confirmed"`
	Error        string     `json:"error,omitempty"`
}

// Hole is a shard not walked to completion, with when it last was.
type Hole struct {
	Shard          string     `json:"shard"`
	Outcome        string     `json:"outcome"`
	LastCompleteAt *time.Time `json:"last_complete_at,omitempty"`
}

// DanglingRef is a file a retained snapshot references that storage did not have, twice.
type DanglingRef struct {
	SnapshotID int64    `json:"snapshot_id"`
	Manifest   string   `json:"manifest"`
	Path       string   `json:"path"`
	Content    string   `json:"content"`
	Refs       []string `json:"refs,omitempty"` // branches and tags whose snapshots reference it
}

// Requests counts storage requests by kind.
type Requests struct {
	List int64 `json:"list"`
	Head int64 `json:"head"` // stat by key (GET/HEAD)
	// ManifestReads are manifests and manifest lists read from storage (the rest came from the
	// manifest cache).
	ManifestReads int `json:"manifest_reads"`
	// Get counts metadata files read to learn which table they belong to.
	Get int64 `json:"get,omitempty"`
}

// Cost is the estimate from the configured prices, in US dollars.
type Cost struct {
	Scan            float64 `json:"scan_usd"`
	OrphansPerMonth float64 `json:"confirmed_orphans_usd_per_month"`
}

func (r *Report) finish(p Prices) {
	r.Prices = p
	r.Cost.Scan = float64(r.Requests.List)/1000*p.ListPer1000 + float64(r.Requests.Head+r.Requests.Get+int64(r.Requests.ManifestReads))/1000*p.GetPer1000
	r.Cost.OrphansPerMonth = float64(r.ConfirmedBytes) / 1e9 * p.StorageGBMonth
	r.Cadence = r.cadence(p)
	r.ShardsComplete, r.ShardsFailed, r.ShardsNotReached, r.TooSoonShards = 0, 0, 0, 0
	for _, sh := range r.Shards {
		switch sh.Outcome {
		case "complete":
			r.ShardsComplete++
		case outcomeNotReached:
			r.ShardsNotReached++
		default:
			r.ShardsFailed++
		}
		if sh.TooSoon {
			r.TooSoonShards++
		}
	}
	r.SettledByWalk = 0
	for _, sh := range r.Shards {
		if sh.Outcome == "complete" && sh.Shard != inventoryShard {
			r.SettledByWalk += sh.Entries
		}
	}
	var b strings.Builder
	if r.FromInventory {
		fmt.Fprintf(&b, "An inventory pass: it listed nothing and settled from the write-path inventory the %d files commits that did not happen staged (%d of them since added by a later commit, %d already gone), with %d HEAD requests. Files nobody recorded are only found by a walk. ",
			r.SettledByInventory, r.StagedThenCommitted, r.LeftoversGone, r.Requests.Head)
		fmt.Fprintf(&b, "%d unreferenced files older than %s; %d (%s) confirmed by two inventory passes at least %s apart, costing about $%.2f a month.",
			r.Candidates, r.AgeThreshold, r.Confirmed, BytesText(r.ConfirmedBytes), r.MinGap, r.Cost.OrphansPerMonth)
		if r.Cadence != nil {
			b.WriteString(" Cadence: " + r.Cadence.Explanation)
		}
		r.Summary = b.String()
		return
	}
	if r.ConfirmOnly {
		fmt.Fprintf(&b, "A confirming pass: it walked only the shards with unconfirmed files and left %d shards whose last walk found no candidate. ", r.NothingToConfirm)
	}
	if len(r.Planned) == 0 && r.State != "running" && !r.ConfirmOnly {
		b.WriteString("The scan ended before it planned its shards: it examined nothing. ")
	}
	fmt.Fprintf(&b, "Planned %d shards: %d walked to completion, %d failed or stopped, %d not reached (%d entries listed, %d LIST and %d HEAD requests, about $%.4f). ",
		len(r.Shards), r.ShardsComplete, r.ShardsFailed, r.ShardsNotReached, r.EntriesListed, r.Requests.List, r.Requests.Head, r.Cost.Scan)
	if len(r.Foreign) > 0 {
		fmt.Fprintf(&b, "Another table lives in this location (%s): no file here is a candidate while it does. ", foreignText(r.Foreign))
	}
	if n := len(r.SharedWith); n > 0 {
		fmt.Fprintf(&b, "%d other known tables share or nest in this location; what they reference counts as referenced. ", n)
	}
	fmt.Fprintf(&b, "%d unreferenced files older than %s in those shards; %d (%s) confirmed by two consecutive complete walks at least %s apart, costing about $%.2f a month. ",
		r.Candidates, r.AgeThreshold, r.Confirmed, BytesText(r.ConfirmedBytes), r.MinGap, r.Cost.OrphansPerMonth)
	if r.Unrecorded != nil {
		fmt.Fprintf(&b, "Of the unreferenced files, %d are leftovers the write-path inventory recorded (settled and confirmed by inventory passes) and %d nobody recorded (found by this walk alone). ", r.SettledByInventory, *r.Unrecorded)
	}
	if r.TooSoonShards > 0 {
		fmt.Fprintf(&b, "%d shard walks came less than %s after the previous one and confirmed nothing. ", r.TooSoonShards, r.MinGap)
	}
	if r.TooYoung > 0 || r.MidWalk > 0 {
		fmt.Fprintf(&b, "%d unreferenced files were too young to judge and %d were committed while the walk ran. ", r.TooYoung, r.MidWalk)
	}
	if n := len(r.Shards) - r.ShardsComplete; n > 0 {
		fmt.Fprintf(&b, "%d shards were not walked to completion and are holes in this scan. ", n)
	}
	if r.Cadence != nil {
		b.WriteString("Cadence: " + r.Cadence.Explanation + " ")
	}
	b.WriteString("A scan of a live store is evidence, not an inventory: files written during it may be missed, and repeated scans converge.")
	r.Summary = b.String()
}

// BytesText writes a byte count for people (KiB, MiB, GiB).
func BytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
