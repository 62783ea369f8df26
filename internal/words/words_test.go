package words

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{72 * time.Hour, "3 days"},
		{24 * time.Hour, "1 day"},
		{444*time.Hour + 20*time.Minute, "18 days 12 hours 20 minutes"},
		{time.Hour, "1 hour"},
		{90 * time.Minute, "1 hour 30 minutes"},
		{25*time.Hour + time.Minute + time.Second, "1 day 1 hour 1 minute"},
		{12432 * time.Microsecond, "12 ms"},
		{time.Microsecond, "under 1 ms"},
		{0, "0 seconds"},
		{-2 * time.Hour, "2 hours"},
		{45 * time.Second, "45 seconds"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 shards"}, {1, "1 shard"}, {2, "2 shards"}} {
		if got := Count(tc.n, "shard"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
