package lineage

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidemark/tidemark/catalog"
)

// Kind is the OpenLineage event kind, told apart by structure (run / dataset / job), since
// producers send stale or missing schemaURLs.
type Kind string

// Event kinds.
const (
	KindRun     Kind = "run"
	KindDataset Kind = "dataset"
	KindJob     Kind = "job"
)

// Facets keeps every facet as raw JSON: known ones are interpreted, unknown ones kept as sent.
type Facets map[string]json.RawMessage

// Event is one parsed OpenLineage event.
type Event struct {
	Kind      Kind
	EventType string // START, RUNNING, COMPLETE, FAIL, ABORT, OTHER; "" when the producer sent none
	EventTime time.Time
	Producer  string
	SchemaURL string
	RunID     string
	RunFacets Facets
	Job       *JobRef
	Inputs    []Dataset
	Outputs   []Dataset
	Dataset   *Dataset // DatasetEvent only
	Raw       []byte   // the event as received (compacted)
}

// JobRef names a job.
type JobRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Facets    Facets `json:"facets"`
}

// Dataset is a dataset in an event with its facets.
type Dataset struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	Facets       Facets `json:"facets"`
	InputFacets  Facets `json:"inputFacets"`
	OutputFacets Facets `json:"outputFacets"`
}

type wireEvent struct {
	EventTime string    `json:"eventTime"`
	EventType string    `json:"eventType"`
	Producer  string    `json:"producer"`
	SchemaURL string    `json:"schemaURL"`
	Run       *wireRun  `json:"run"`
	Job       *JobRef   `json:"job"`
	Inputs    []Dataset `json:"inputs"`
	Outputs   []Dataset `json:"outputs"`
	Dataset   *Dataset  `json:"dataset"`
}

type wireRun struct {
	RunID  string `json:"runId"`
	Facets Facets `json:"facets"`
}

// Limits on what one event may hold.
const (
	MaxEventBytes  = 4 << 20
	MaxJSONDepth   = 64 // JSON nesting; real facets nest a handful of levels
	MaxDatasets    = 1000
	maxFieldLength = 1024
)

var eventTypes = map[string]bool{"START": true, "RUNNING": true, "COMPLETE": true, "FAIL": true, "ABORT": true, "OTHER": true}

// ParseEvent parses one event. Errors wrap catalog.ErrInvalid and say what is wrong; they are
// final (the producer should not retry).
func ParseEvent(raw []byte) (Event, error) {
	if len(raw) > MaxEventBytes {
		return Event{}, invalid("event is %d bytes; the limit is %d", len(raw), MaxEventBytes)
	}
	compact, err := compactShallow(raw, MaxJSONDepth)
	if err != nil {
		return Event{}, err
	}
	var w wireEvent
	if err := json.Unmarshal(raw, &w); err != nil {
		return Event{}, invalid("event is not valid JSON: %v", err)
	}
	ev := Event{EventType: strings.ToUpper(strings.TrimSpace(w.EventType)), Producer: w.Producer, SchemaURL: w.SchemaURL,
		Inputs: w.Inputs, Outputs: w.Outputs, Raw: compact}
	if ev.EventType != "" && !eventTypes[ev.EventType] {
		return Event{}, invalid("eventType %q is not one of START, RUNNING, COMPLETE, FAIL, ABORT, OTHER", w.EventType)
	}
	t, err := ParseTime(w.EventTime)
	if err != nil {
		return Event{}, err
	}
	ev.EventTime = t

	switch {
	case w.Run != nil:
		ev.Kind = KindRun
		if strings.TrimSpace(w.Run.RunID) == "" {
			return Event{}, invalid("run event without run.runId; every RunEvent needs the run's ID")
		}
		if len(w.Run.RunID) > 255 {
			return Event{}, invalid("run.runId is %d bytes; the limit is 255", len(w.Run.RunID))
		}
		if w.Job == nil {
			return Event{}, invalid("run event without job; say which job ran (job.namespace, job.name)")
		}
		ev.RunID, ev.RunFacets = w.Run.RunID, w.Run.Facets
	case w.Dataset != nil && w.Job == nil:
		ev.Kind = KindDataset
		ev.Dataset = w.Dataset
		if err := checkDataset("dataset", *w.Dataset); err != nil {
			return Event{}, err
		}
	case w.Job != nil:
		ev.Kind = KindJob
	default:
		return Event{}, invalid("event has no run, job or dataset; it is not a RunEvent, JobEvent or DatasetEvent")
	}
	if w.Job != nil {
		if err := catalog.ValidateName(w.Job.Namespace, w.Job.Name); err != nil {
			return Event{}, invalid("job: %v", err)
		}
		ev.Job = w.Job
	}
	if len(ev.Inputs)+len(ev.Outputs) > MaxDatasets {
		return Event{}, invalid("event names %d datasets; the limit is %d", len(ev.Inputs)+len(ev.Outputs), MaxDatasets)
	}
	for i, d := range ev.Inputs {
		if err := checkDataset(fmt.Sprintf("inputs[%d]", i), d); err != nil {
			return Event{}, err
		}
	}
	for i, d := range ev.Outputs {
		if err := checkDataset(fmt.Sprintf("outputs[%d]", i), d); err != nil {
			return Event{}, err
		}
	}
	return ev, nil
}

func checkDataset(where string, d Dataset) error {
	if err := catalog.ValidateName(d.Namespace, d.Name); err != nil {
		return invalid("%s: %v", where, err)
	}
	return nil
}

// ParseTime reads an eventTime: RFC 3339, or without a zone (taken as UTC, as Marquez does).
func ParseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, invalid("eventTime is missing; send an ISO 8601 time such as 2026-01-31T12:00:00Z")
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z0700", "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Truncate(time.Microsecond), nil
		}
	}
	return time.Time{}, invalid("eventTime %q is not an ISO 8601 time such as 2026-01-31T12:00:00Z", truncate(s, 64))
}

func invalid(format string, args ...any) error {
	return &catalog.Error{Kind: catalog.ErrInvalid, Message: "lineage: " + fmt.Sprintf(format, args...)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// On a character boundary: half a character is invalid UTF-8, which PostgreSQL refuses.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// facet decodes a known facet into v; a malformed known facet is ignored (and stays stored raw),
// since refusing a whole event over one facet would lose its lineage.
func (f Facets) facet(name string, v any) bool {
	raw, ok := f[name]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// Known facets.
type (
	// catalogFacet names the catalog a dataset belongs to (OpenLineage CatalogDatasetFacet).
	catalogFacet struct {
		Framework string `json:"framework"`
		Type      string `json:"type"`
		Name      string `json:"name"`
	}
	symlinksFacet struct {
		Identifiers []struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			Type      string `json:"type"`
		} `json:"identifiers"`
	}
	lifecycleFacet struct {
		LifecycleStateChange string `json:"lifecycleStateChange"`
		PreviousIdentifier   *struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"previousIdentifier"`
	}
	ownershipFacet struct {
		Owners []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"owners"`
	}
	documentationFacet struct {
		Description string `json:"description"`
	}
	columnLineageFacet struct {
		Fields map[string]struct {
			InputFields []struct {
				Namespace       string `json:"namespace"`
				Name            string `json:"name"`
				Field           string `json:"field"`
				Transformations []struct {
					Type        string `json:"type"`
					Subtype     string `json:"subtype"`
					Description string `json:"description"`
					Masking     bool   `json:"masking"`
				} `json:"transformations"`
			} `json:"inputFields"`
			// Deprecated in spec 1-2-0 but still sent (Airflow): one transformation per output field.
			TransformationType        string `json:"transformationType"`
			TransformationDescription string `json:"transformationDescription"`
		} `json:"fields"`
	}
	parentFacet struct {
		Run struct {
			RunID string `json:"runId"`
		} `json:"run"`
	}
	nominalTimeFacet struct {
		NominalStartTime string `json:"nominalStartTime"`
		NominalEndTime   string `json:"nominalEndTime"`
	}
	datasetTypeFacet struct {
		DatasetType string `json:"datasetType"`
	}
)

// compactShallow refuses JSON nesting deeper than max (documents built to exhaust the decoder)
// and returns b without insignificant whitespace, in a buffer of its own: what json.Compact makes
// of valid JSON, in the same pass, without json.Compact's own validation (Unmarshal validates;
// FuzzParseEvent checks the two agree).
func compactShallow(b []byte, max int) ([]byte, error) {
	out := make([]byte, 0, len(b))
	depth, inString, escaped, from := 0, false, false, 0
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return nil, invalid("event nests deeper than %d levels", max)
			}
		case c == '}' || c == ']':
			depth--
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out = append(out, b[from:i]...)
			from = i + 1
		}
	}
	return append(out, b[from:]...), nil
}
