// Package words writes figures as a person reads them in prose: durations in words ("3 days",
// "1 hour 30 minutes"), not Go's "72h0m0s". Machine-readable fields keep their own formats.
package words

import (
	"fmt"
	"strings"
	"time"
)

// Duration says d in words: at most its three largest non-zero units of days, hours, minutes
// and seconds ("18 days 12 hours 20 minutes"); under a second, milliseconds ("12 ms"); zero
// is "0 seconds". A negative d is said as its size.
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d < time.Second {
		if d == 0 {
			return "0 seconds"
		}
		if d < time.Millisecond {
			return "under 1 ms"
		}
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}}
	var parts []string
	for _, u := range units {
		if n := d / u.size; n > 0 && len(parts) < 3 {
			parts = append(parts, Count(int64(n), u.name))
			d -= n * u.size
		}
	}
	return strings.Join(parts, " ")
}

// Count says n things with the noun in the right number: "1 shard", "3 shards".
func Count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// TimeLayout is how prose and pages write a time: to the minute, in UTC, saying so.
const TimeLayout = "2006-01-02 15:04 UTC"

// Time says t the one way prose and pages do ("2026-12-04 09:30 UTC").
func Time(t time.Time) string { return t.UTC().Format(TimeLayout) }
