package versions_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/versions"
)

func names(vs []versions.Version) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.Version)
	}
	return out
}

func TestTimelinePagesNewestFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		f.version(c.raw, "manual-x", time.Time{}) // nothing dated it: last
		if err := f.svc.MarkExpired(f.ctx, c.raw, []int64{1001}, "cleanup", at(9*h)); err != nil {
			t.Fatal(err)
		}
		var got []string
		var after uuid.UUID
		pages := 0
		for {
			page, err := f.svc.Timeline(f.ctx, c.raw, versions.TimelineQuery{Limit: 2, After: after})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			got = append(got, names(page.Versions)...)
			for _, v := range page.Versions {
				if (v.Version == a1) != (v.Expired != nil) {
					t.Errorf("%s: expired %+v; only %s was expired", v.Version, v.Expired, a1)
				}
			}
			if !page.More {
				break
			}
			after = page.Versions[len(page.Versions)-1].ID
		}
		if want := []string{a3, a2, a1, "manual-x"}; strings.Join(got, ",") != strings.Join(want, ",") || pages != 2 {
			t.Fatalf("timeline %v over %d pages, want %v over 2", got, pages, want)
		}

		page, err := f.svc.Timeline(f.ctx, c.raw, versions.TimelineQuery{From: at(2 * h), To: at(5 * h)})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(page.Versions); len(got) != 1 || got[0] != a2 || page.More {
			t.Errorf("from 2h to 5h: %v (more %v), want [%s]: from inclusive, to exclusive, undated left out", got, page.More, a2)
		}
	})
}

func TestTimelineRunsAndReaders(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		f.read(c.raw, a2, "analyst", at(3*h))    // a2 was current: not time travel
		f.read(c.raw, a2, "auditor", at(6*h))    // a3 was committed at 5h: time travel
		f.read(c.raw, a2, "auditor", at(7*h))    // again
		f.read(c.raw, a1, "auditor", at(3*h))    // a2 replaced a1 at 2h: time travel
		f.read(c.raw, a3, "analyst", at(6*h))    // current: not time travel
		f.read(c.raw, "", "analyst", at(6*h))    // no version stated: counted nowhere here
		f.read(c.daily, a2, "stranger", at(6*h)) // another asset's version of that name

		page, err := f.svc.Timeline(f.ctx, c.raw, versions.TimelineQuery{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]versions.Version{}
		for _, v := range page.Versions {
			byName[v.Version] = v
		}
		v2 := byName[a2]
		if len(v2.ReadBy.Runs) != 1 || v2.ReadBy.Runs[0].RunID != "r2" || v2.ReadBy.Runs[0].Label != versions.Reported ||
			v2.ReadBy.Runs[0].Job.Name != "build_daily" || v2.ReadBy.Runs[0].Job.ID != c.buildDaily || v2.ReadBy.RunCount != 1 {
			t.Errorf("a2 read by %+v (count %d), want r2 of build_daily, reported", v2.ReadBy.Runs, v2.ReadBy.RunCount)
		}
		if v2.ReadBy.Reads.Reads != 3 || v2.ReadBy.Actors != 2 || v2.ReadBy.Readers[0].Actor != "auditor" || v2.ReadBy.Readers[0].Reads != 2 ||
			v2.ReadBy.LastRead == nil || !v2.ReadBy.LastRead.Equal(at(7*h)) {
			t.Errorf("a2 readers %+v, want 3 reads by 2 actors, auditor first, last at 7h", v2.ReadBy.Reads)
		}
		if v2.TimeTravel.Reads.Reads != 2 || len(v2.TimeTravel.Readers) != 1 || v2.TimeTravel.Readers[0].Actor != "auditor" ||
			v2.TimeTravel.Since == nil || !v2.TimeTravel.Since.Equal(at(5*h)) {
			t.Errorf("a2 time travel %+v since %v, want auditor's 2 reads after 5h", v2.TimeTravel.Reads, v2.TimeTravel.Since)
		}
		v3 := byName[a3]
		if v3.TimeTravel.Reads.Reads != 0 || v3.TimeTravel.Since != nil || v3.ReadBy.Reads.Reads != 1 {
			t.Errorf("a3 (current) time travel %+v since %v, reads %d; want none, nil, 1", v3.TimeTravel.Reads, v3.TimeTravel.Since, v3.ReadBy.Reads.Reads)
		}
		if v3.Summary["added-records"] != "10" || v3.SnapshotID == nil || *v3.SnapshotID != 1003 || v3.CommittedAt == nil || !v3.CommittedAt.Equal(at(5*h)) {
			t.Errorf("a3 described as %+v", v3)
		}

		// The second page's newest version asks for its successor: a1's reads at 3h follow a2.
		page2, err := f.svc.Timeline(f.ctx, c.raw, versions.TimelineQuery{Limit: 2, After: page.Versions[1].ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(page2.Versions) != 1 || page2.Versions[0].Version != a1 || page2.Versions[0].TimeTravel.Reads.Reads != 1 {
			t.Errorf("page 2 %+v, want a1 with one time-travel read", page2.Versions)
		}

		daily, err := f.svc.Get(f.ctx, c.daily, od2)
		if err != nil {
			t.Fatal(err)
		}
		p := daily.ProducedBy
		if len(p.Runs) != 1 || p.Runs[0].RunID != "r2" || p.Runs[0].Label != versions.Inferred || p.Principal != "loader" {
			t.Errorf("od2 produced by %+v", p)
		}
		if len(daily.ReadBy.Runs) != 1 || daily.ReadBy.Runs[0].RunID != "r3" || daily.ReadBy.Runs[0].Job.Name != "build_report" {
			t.Errorf("od2 read by %+v", daily.ReadBy.Runs)
		}
	})
}

func TestTimelineBadInput(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		other, err := f.svc.Timeline(f.ctx, c.daily, versions.TimelineQuery{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name  string
			asset uuid.UUID
			q     versions.TimelineQuery
			kind  error
			field string
		}{
			{"unknown asset", uuid.New(), versions.TimelineQuery{}, catalog.ErrNotFound, ""},
			{"limit 0 is the default, 501 is not", c.raw, versions.TimelineQuery{Limit: 501}, catalog.ErrInvalid, "limit"},
			{"negative limit", c.raw, versions.TimelineQuery{Limit: -1}, catalog.ErrInvalid, "limit"},
			{"from after to", c.raw, versions.TimelineQuery{From: at(5 * h), To: at(2 * h)}, catalog.ErrInvalid, "from"},
			{"another asset's cursor", c.raw, versions.TimelineQuery{After: other.Versions[0].ID}, catalog.ErrInvalid, "cursor"},
			{"a cursor naming nothing", c.raw, versions.TimelineQuery{After: uuid.New()}, catalog.ErrInvalid, "cursor"},
		} {
			_, err := f.svc.Timeline(f.ctx, tc.asset, tc.q)
			var ce *catalog.Error
			if !errors.Is(err, tc.kind) || !errors.As(err, &ce) || ce.Field != tc.field {
				t.Errorf("%s: %v, want %v on field %q", tc.name, err, tc.kind, tc.field)
			}
		}
		_, err = f.svc.Get(f.ctx, c.raw, "9999")
		if !errors.Is(err, catalog.ErrNotFound) || !strings.Contains(err.Error(), `has no version "9999"`) || !strings.Contains(err.Error(), "raw.orders") {
			t.Errorf("unknown version: %v, want not found naming the asset and the version", err)
		}
	})
}
