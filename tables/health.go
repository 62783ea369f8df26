package tables

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"time"
)

// DefaultSmallFile is the size under which a data file counts as small.
const DefaultSmallFile = 32 << 20

// Health is the layout health of a table's current snapshot, with the figures behind each
// recommendation.
type Health struct {
	SnapshotID            *int64           `json:"snapshot_id,omitempty"`
	ComputedAt            time.Time        `json:"computed_at"`
	DataFiles             int64            `json:"data_files"`
	DeleteFiles           int64            `json:"delete_files"`
	Records               int64            `json:"records"`
	Bytes                 int64            `json:"bytes"`
	Partitions            int64            `json:"partitions"`
	FilesPerPartition     Distribution     `json:"files_per_partition"`
	FileSize              Distribution     `json:"file_size_bytes"`
	FileSizeHistogram     []Bucket         `json:"file_size_histogram"`
	SmallFileTarget       int64            `json:"small_file_target_bytes"`
	SmallFiles            int64            `json:"small_files"`
	SmallFilesBytes       int64            `json:"small_files_bytes"`
	Manifests             int              `json:"manifests"` // in the current snapshot, data and delete
	ManifestsPerSnapshot  Distribution     `json:"manifests_per_snapshot"`
	ScanEntries           int64            `json:"scan_entries"` // manifest entries a full scan of the current snapshot reads
	SnapshotsRetained     int              `json:"snapshots_retained"`
	OldestSnapshotAt      *time.Time       `json:"oldest_snapshot_at,omitempty"`
	MetadataFilesRetained int              `json:"metadata_files_retained"` // current plus metadata-log
	Recommendations       []Recommendation `json:"recommendations"`
}

// Distribution summarises a set of counts or sizes.
type Distribution struct {
	Min    int64   `json:"min"`
	Median int64   `json:"median"`
	Avg    float64 `json:"avg"`
	P90    int64   `json:"p90"`
	Max    int64   `json:"max"`
}

// Bucket is one bar of the file-size histogram: files of at most UpTo bytes (and more than the
// previous bucket's); UpTo 0 is the open last bucket.
type Bucket struct {
	Label string `json:"label"`
	UpTo  int64  `json:"up_to_bytes"`
	Files int64  `json:"files"`
	Bytes int64  `json:"bytes"`
}

// Recommendation is one plain-language suggestion and the figures it rests on.
type Recommendation struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Figures map[string]any `json:"figures"`
}

var bucketEdges = []struct {
	label string
	upTo  int64
}{
	{"<= 1 MiB", 1 << 20}, {"<= 8 MiB", 8 << 20}, {"<= 32 MiB", 32 << 20}, {"<= 128 MiB", 128 << 20},
	{"<= 512 MiB", 512 << 20}, {"> 512 MiB", 0},
}

// healthAcc accumulates the current snapshot's live entries.
type healthAcc struct {
	specs     map[int32]Spec
	small     int64
	sizes     []int64
	parts     map[string]*partAcc
	h         Health
	histogram []Bucket
}

// keyer renders partition keys with reused buffers; one per goroutine.
type keyer struct {
	specs             map[int32]Spec
	keyBuf, coarseBuf []byte
}

type partAcc struct {
	files int64
	bytes int64
	// coarse is the partition key with hourly (or daily) values rolled up to days (or months),
	// for estimating a coarser layout.
	coarse string
}

func newHealthAcc(specs []Spec, small int64) *healthAcc {
	a := &healthAcc{specs: map[int32]Spec{}, small: small, parts: map[string]*partAcc{}}
	for _, s := range specs {
		a.specs[int32(s.ID)] = s
	}
	for _, b := range bucketEdges {
		a.histogram = append(a.histogram, Bucket{Label: b.label, UpTo: b.upTo})
	}
	return a
}

// partitionKey renders the entry's partition into the keyer's buffer, valid until the next
// call. It runs once per live data file (tens of thousands per table), so it appends instead of
// formatting, and the caller looks the key up without making a string of it.
func (a *keyer) partitionKey(e entry) []byte {
	key := strconv.AppendInt(a.keyBuf[:0], int64(e.SpecID), 10)
	for _, pv := range e.Partition {
		key = append(key, '/')
		key = strconv.AppendInt(key, int64(pv.FieldID), 10)
		key = append(key, '=')
		key = appendValue(key, pv.Value)
	}
	a.keyBuf = key
	return key
}

// coarseKey renders the entry's partition one granularity coarser (hour -> day, day -> month);
// it runs once per partition.
func (a *keyer) coarseKey(e entry) string {
	coarse := strconv.AppendInt(a.coarseBuf[:0], int64(e.SpecID), 10)
	spec := a.specs[e.SpecID]
	for _, pv := range e.Partition {
		coarse = append(coarse, '/')
		coarse = strconv.AppendInt(coarse, int64(pv.FieldID), 10)
		coarse = append(coarse, '=')
		rolled := false
		if n, ok := asInt(pv.Value); ok {
			switch transformOf(spec, pv.FieldID) {
			case "hour":
				coarse, rolled = strconv.AppendInt(coarse, floorDiv(n, 24), 10), true
			case "day":
				coarse, rolled = time.Unix(n*86400, 0).UTC().AppendFormat(coarse, "2006-01"), true
			}
		}
		if !rolled {
			coarse = appendValue(coarse, pv.Value)
		}
	}
	a.coarseBuf = coarse
	return string(coarse)
}

// appendValue appends a partition value as fmt's %v would.
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case json.Number:
		return append(b, x...)
	case string:
		return append(b, x...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(b, x)
	}
	return fmt.Append(b, v)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case float64:
		return int64(x), x == math.Trunc(x)
	}
	return 0, false
}

func transformOf(s Spec, fieldID int) string {
	for _, f := range s.Fields {
		if f.FieldID == fieldID {
			return f.Transform
		}
	}
	return ""
}

// finish computes the distributions and recommendations. manifests are the per-snapshot
// manifest counts; metadataFiles counts the current file and the metadata-log.
func (a *healthAcc) finish(now time.Time, snapshotID *int64, currentManifests int, scanEntries int64, manifests []int64, snaps []Snapshot, metadataFiles int, props map[string]string) Health {
	h := a.h
	h.SnapshotID = snapshotID
	h.ComputedAt = now
	h.SmallFileTarget = a.small
	h.FileSize = distribution(a.sizes)
	h.FileSizeHistogram = a.histogram
	h.Partitions = int64(len(a.parts))
	perPart := make([]int64, 0, len(a.parts))
	coarse := map[string]int64{}
	for _, p := range a.parts {
		perPart = append(perPart, p.files)
		coarse[p.coarse] += p.bytes
	}
	h.FilesPerPartition = distribution(perPart)
	h.Manifests = currentManifests
	h.ManifestsPerSnapshot = distribution(manifests)
	h.ScanEntries = scanEntries
	h.SnapshotsRetained = len(snaps)
	if len(snaps) > 0 {
		t := snaps[0].At
		for _, s := range snaps {
			if s.At.Before(t) {
				t = s.At
			}
		}
		h.OldestSnapshotAt = &t
	}
	h.MetadataFilesRetained = metadataFiles
	h.Recommendations = a.recommend(h, int64(len(coarse)), now, props)
	return h
}

func (a *healthAcc) recommend(h Health, coarsePartitions int64, now time.Time, props map[string]string) []Recommendation {
	recs := []Recommendation{}
	if h.SnapshotID == nil {
		return append(recs, Recommendation{Code: "empty", Message: "The table has no current snapshot: nothing to assess yet.", Figures: map[string]any{}})
	}
	avgFile := int64(0)
	if h.DataFiles > 0 {
		avgFile = h.Bytes / h.DataFiles
	}
	target := a.small
	// Over-partitioning: many partitions each holding less than one target-sized file.
	if h.Partitions >= 100 && h.Bytes/max(h.Partitions, 1) < target {
		grain, coarser := a.finestTransform()
		msg := fmt.Sprintf("%s %spartitions holding %s files of %s on average: compact",
			count(h.Partitions), grain, trimFloat(h.FilesPerPartition.Avg), size(avgFile))
		figs := map[string]any{"partitions": h.Partitions, "avg_files_per_partition": h.FilesPerPartition.Avg, "avg_file_bytes": avgFile}
		if coarser != "" && coarsePartitions < h.Partitions {
			msg += fmt.Sprintf(", or partition by %s (about %s partitions)", coarser, count(coarsePartitions))
			figs["coarser_partitions"] = coarsePartitions
			figs["coarser_transform"] = coarser
		} else {
			msg += ", or choose a coarser partitioning"
		}
		goal, from := compactionTarget(props)
		msg += ". " + compactAdvice(goal, from)
		figs["target_file_size_bytes"] = goal
		recs = append(recs, Recommendation{Code: "over_partitioned", Message: msg, Figures: figs})
	} else if h.DataFiles >= 16 && h.SmallFiles*2 >= h.DataFiles {
		goal, from := compactionTarget(props)
		files := (h.SmallFilesBytes + goal - 1) / goal
		recs = append(recs, Recommendation{Code: "small_files",
			Message: fmt.Sprintf("%s of %s data files (%d%%) are smaller than %s, %s on average: compact them into about %s files. %s",
				count(h.SmallFiles), count(h.DataFiles), h.SmallFiles*100/h.DataFiles, size(target), size(h.SmallFilesBytes/max(h.SmallFiles, 1)), count(max(files, 1)),
				compactAdvice(goal, from)),
			Figures: map[string]any{"small_files": h.SmallFiles, "data_files": h.DataFiles, "small_files_bytes": h.SmallFilesBytes, "target_bytes": target,
				"target_file_size_bytes": goal}})
	}
	if h.Manifests >= 100 && h.ScanEntries/int64(h.Manifests) < 1000 {
		recs = append(recs, Recommendation{Code: "many_manifests",
			Message: fmt.Sprintf("The current snapshot has %s manifests with %s entries on average: rewrite manifests so planning reads fewer files.", count(int64(h.Manifests)), count(h.ScanEntries/int64(h.Manifests))),
			Figures: map[string]any{"manifests": h.Manifests, "scan_entries": h.ScanEntries}})
	}
	if h.DeleteFiles > 0 && h.DeleteFiles*10 >= h.DataFiles {
		recs = append(recs, Recommendation{Code: "delete_files",
			Message: fmt.Sprintf("%s delete files against %s data files: compact to apply the deletes, so reads stop merging them.", count(h.DeleteFiles), count(h.DataFiles)),
			Figures: map[string]any{"delete_files": h.DeleteFiles, "data_files": h.DataFiles}})
	}
	if h.OldestSnapshotAt != nil {
		age := now.Sub(*h.OldestSnapshotAt)
		if h.SnapshotsRetained > 100 || (h.SnapshotsRetained > 1 && age > 30*24*time.Hour) {
			recs = append(recs, Recommendation{Code: "expire_snapshots",
				Message: fmt.Sprintf("%s snapshots are retained, the oldest %d days old: expire snapshots to free the files only they reference.", count(int64(h.SnapshotsRetained)), int(age.Hours()/24)),
				Figures: map[string]any{"snapshots": h.SnapshotsRetained, "oldest_age_days": int(age.Hours() / 24)}})
		}
	}
	if h.MetadataFilesRetained > 100 && props["write.metadata.delete-after-commit.enabled"] != "true" {
		recs = append(recs, Recommendation{Code: "metadata_files",
			Message: fmt.Sprintf("%s metadata files are retained: set write.metadata.delete-after-commit.enabled=true and write.metadata.previous-versions-max.", count(int64(h.MetadataFilesRetained))),
			Figures: map[string]any{"metadata_files": h.MetadataFilesRetained}})
	}
	return recs
}

// DefaultTargetFileSize is Iceberg's default write.target-file-size-bytes (512 MiB): what a
// compaction writes when the table sets no target of its own.
const DefaultTargetFileSize = 512 << 20

// compactionTarget is the file size a compaction should write: the table's
// write.target-file-size-bytes, else Iceberg's default; and which of the two it is.
func compactionTarget(props map[string]string) (int64, string) {
	if n, err := strconv.ParseInt(props["write.target-file-size-bytes"], 10, 64); err == nil && n > 0 {
		return n, "the table's write.target-file-size-bytes"
	}
	return DefaultTargetFileSize, "Iceberg's default; the table sets no write.target-file-size-bytes"
}

// compactAdvice names the target size and the command that compacts to it, so the advice can be
// acted on as it stands.
func compactAdvice(goal int64, from string) string {
	return fmt.Sprintf("Rewrite the data files to %s files (%s), e.g. in Spark: CALL <catalog>.system.rewrite_data_files(table => '<namespace>.<table>', options => map('target-file-size-bytes','%d')).",
		size(goal), from, goal)
}

// finestTransform names the finest time grain the current specs partition by and the next
// coarser one ("hourly ", "day").
func (a *healthAcc) finestTransform() (string, string) {
	has := map[string]bool{}
	for _, s := range a.specs {
		for _, f := range s.Fields {
			has[f.Transform] = true
		}
	}
	switch {
	case has["hour"]:
		return "hourly ", "day"
	case has["day"]:
		return "daily ", "month"
	}
	return "", ""
}

// distribution summarises v, reordering it. It selects the median and 90th percentile instead
// of sorting: a refresh computes it over every data file's size (78,000 in the benchmark's
// hourly table), and the sort was most of the health figures' time.
func distribution(v []int64) Distribution {
	if len(v) == 0 {
		return Distribution{}
	}
	var sum float64
	lo, hi := v[0], v[0]
	for _, x := range v {
		sum += float64(x)
		lo, hi = min(lo, x), max(hi, x)
	}
	p90 := min(len(v)-1, len(v)*9/10)
	d := Distribution{Min: lo, Max: hi, Avg: math.Round(sum/float64(len(v))*100) / 100, P90: nth(v, p90)}
	// nth left nothing larger before p90, so the median (at or before it) is among v[:p90+1].
	d.Median = nth(v[:p90+1], len(v)/2)
	return d
}

// nth reorders v so that v[k] holds what a sort would put there, nothing larger before it and
// nothing smaller after it, and returns it. Equal values are grouped (three-way partitions),
// so the many equal counts of files per partition cost no more than distinct ones; a run of
// bad pivots falls back to sorting.
func nth(v []int64, k int) int64 {
	lo, hi := 0, len(v)-1
	for budget := 2*bits.Len(uint(len(v))) + 8; lo < hi; budget-- {
		if budget == 0 {
			slices.Sort(v[lo : hi+1])
			break
		}
		a, b, c := v[lo], v[lo+(hi-lo)/2], v[hi]
		p := max(min(a, b), min(max(a, b), c)) // the median of the three
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case v[i] < p:
				v[lt], v[i] = v[i], v[lt]
				lt++
				i++
			case v[i] > p:
				v[i], v[gt] = v[gt], v[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return p
		}
	}
	return v[k]
}

// count writes n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + count(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func trimFloat(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprintf("%.1f", f)
}

func size(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%s MiB", trimFloat(math.Round(float64(b)/(1<<20)*10)/10))
	case b >= 1<<10:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}
