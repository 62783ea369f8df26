package cleanup

import (
	"fmt"
	"strings"
	"time"
)

// Window is a daily quiet window (UTC) in which scheduled scans and executions run, so the
// bot's storage requests stay away from the hours of live traffic. The zero Window is always
// open. A window may wrap midnight (22:00-04:00).
type Window struct {
	from, to int // minutes after midnight; from == to means always open
	set      bool
}

// ParseWindow reads "HH:MM-HH:MM" (UTC); "" is always open.
func ParseWindow(s string) (Window, error) {
	if s == "" {
		return Window{}, nil
	}
	bad := fmt.Errorf("cleanup: maintenance window %q: give HH:MM-HH:MM in UTC, e.g. 01:00-05:00", s)
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return Window{}, bad
	}
	clock := func(v string, end bool) (int, bool) {
		if v == "24:00" && end {
			return 24 * 60, true
		}
		t, err := time.Parse("15:04", v)
		return t.Hour()*60 + t.Minute(), err == nil && len(v) == 5
	}
	f, ok1 := clock(from, false)
	e, ok2 := clock(to, true)
	if !ok1 || !ok2 {
		return Window{}, bad
	}
	h1, m1, h2, m2 := f/60, f%60, e/60, e%60
	w := Window{from: h1*60 + m1, to: h2*60 + m2, set: true}
	if w.from == w.to%(24*60) {
		return Window{}, fmt.Errorf("cleanup: maintenance window %q is empty: give two different times, or none for any time", s)
	}
	return w, nil
}

// Contains reports whether t falls in the window.
func (w Window) Contains(t time.Time) bool {
	if !w.set {
		return true
	}
	t = t.UTC()
	m := t.Hour()*60 + t.Minute()
	if w.from < w.to {
		return m >= w.from && m < w.to
	}
	return m >= w.from || m < w.to
}

func (w Window) String() string {
	if !w.set {
		return "any time"
	}
	return fmt.Sprintf("%02d:%02d-%02d:%02d UTC", w.from/60, w.from%60, w.to/60, w.to%60)
}

// WithWindow restricts scheduled scans (Run, ScanDue) and InWindow to a daily window.
func WithWindow(w Window) Option { return func(s *Service) { s.window = w } }

// InWindow reports whether scheduled work may run now.
func (s *Service) InWindow() bool { return s.window.Contains(s.clock()) }
