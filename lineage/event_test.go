package lineage

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
)

func TestParseEvent(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		kind    Kind
		typ     string
		time    string
		wantErr string
	}{
		{"RunEvent", `{"eventType":"START","eventTime":"2024-01-02T03:04:05.123+01:00","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, KindRun, "START", "2024-01-02T02:04:05.123Z", ""},
		{"NoTimezoneIsUTC", `{"eventTime":"2020-12-28T19:51:01.641499","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, KindRun, "", "2020-12-28T19:51:01.641499Z", ""},
		{"LowercaseType", `{"eventType":"complete","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, KindRun, "COMPLETE", "2024-01-01T00:00:00Z", ""},
		{"DatasetEventByStructure", `{"eventTime":"2024-01-01T00:00:00Z","dataset":{"namespace":"n","name":"d"},"schemaURL":"https://openlineage.io/spec/2-0-0/OpenLineage.json#/$defs/RunEvent"}`, KindDataset, "", "2024-01-01T00:00:00Z", ""},
		{"JobEvent", `{"eventTime":"2024-01-01T00:00:00Z","job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"a"}]}`, KindJob, "", "2024-01-01T00:00:00Z", ""},
		{"UnknownFacetsKept", `{"eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r","facets":{"acme_cost":{"usd":3}}},"job":{"namespace":"n","name":"j"}}`, KindRun, "", "2024-01-01T00:00:00Z", ""},
		{"MissingRunID", `{"eventTime":"2024-01-01T00:00:00Z","run":{"runId":" "},"job":{"namespace":"n","name":"j"}}`, "", "", "", "without run.runId"},
		{"RunWithoutJob", `{"eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r"}}`, "", "", "", "without job"},
		{"JobWithoutName", `{"eventTime":"2024-01-01T00:00:00Z","job":{"namespace":"n"}}`, "", "", "", "name is empty"},
		{"NoTime", `{"run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`, "", "", "", "eventTime is missing"},
		{"Nothing", `{"eventTime":"2024-01-01T00:00:00Z"}`, "", "", "", "no run, job or dataset"},
		{"Array", `[]`, "", "", "", "not valid JSON"},
		{"Truncated", `{"eventTime":`, "", "", "", "not valid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ParseEvent([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, catalog.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != tc.kind || ev.EventType != tc.typ || ev.EventTime.Format(time.RFC3339Nano) != tc.time {
				t.Fatalf("got kind %s type %q time %s", ev.Kind, ev.EventType, ev.EventTime.Format(time.RFC3339Nano))
			}
		})
	}
	ev, _ := ParseEvent([]byte(cases[5].in))
	if _, ok := ev.RunFacets["acme_cost"]; !ok {
		t.Fatal("unknown run facet dropped")
	}
}

func TestParseFixtures(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/openlineage/*/*.json")
	more, _ := filepath.Glob("../demo/sequences/*/*.json")
	paths = append(paths, more...)
	if len(paths) < 30 {
		t.Fatalf("found only %d fixtures", len(paths))
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParseEvent(b)
		if strings.Contains(p, "PARTIAL") {
			if err == nil {
				t.Errorf("%s: the partial template parsed, but it has no eventTime", p)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// FuzzParseEvent: no input panics or hangs the parser; whatever it accepts has a kind, a time,
// valid names and a raw copy that parses again to the same kind.
func FuzzParseEvent(f *testing.F) {
	paths, _ := filepath.Glob("../testdata/openlineage/events/*.json")
	for _, p := range paths {
		// Small seeds only: minimising a 40 KB interesting input takes the fuzzer longer than the
		// brief CI run (the large fixtures are covered by TestParseFixtures).
		if b, err := os.ReadFile(p); err == nil && len(b) < 2048 {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"eventTime":"2024-01-01T00:00:00","run":{"runId":"r"},"job":{"namespace":"n","name":"j"}}`))
	f.Add([]byte(`[[[[[[[[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := ParseEvent(b)
		if err != nil {
			if !errors.Is(err, catalog.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if ev.Kind == "" || ev.EventTime.IsZero() {
			t.Fatalf("accepted an event without kind or time: %+v", ev)
		}
		if ev.Job != nil && catalog.ValidateName(ev.Job.Namespace, ev.Job.Name) != nil {
			t.Fatalf("accepted an invalid job name %+v", ev.Job)
		}
		again, err := ParseEvent(ev.Raw)
		if err != nil || again.Kind != ev.Kind || !again.EventTime.Equal(ev.EventTime) {
			t.Fatalf("raw copy does not parse back: %v", err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, b); err != nil || !bytes.Equal(ev.Raw, want.Bytes()) {
			t.Fatalf("raw copy %q is not the compacted event %q (%v)", ev.Raw, want.Bytes(), err)
		}
	})
}

// BenchmarkParseEvent parses a real Spark event (9 KB, column lineage) as a Java client sends it
// (compact) and as pretty-printed JSON.
func BenchmarkParseEvent(b *testing.B) {
	pretty, err := os.ReadFile("../testdata/openlineage/events/04_spark_bigquery_to_file_complete_columnLineage.json")
	if err != nil {
		b.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, pretty); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		raw  []byte
	}{{"compact", compact.Bytes()}, {"pretty", pretty}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.raw)))
			for range b.N {
				if _, err := ParseEvent(c.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
