package web

// What the pages share: the templates' functions, and the names that label a page's assets.

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/internal/words"
)

var funcs = template.FuncMap{
	"ago": func(t any) string {
		var tt time.Time
		switch v := t.(type) {
		case time.Time:
			tt = v
		case *time.Time:
			if v == nil {
				return "never"
			}
			tt = *v
		default:
			return ""
		}
		if tt.IsZero() {
			return ""
		}
		return when(tt)
	},
	"bytes": cleanup.BytesText,
	// dur says a duration in words ("3 days"); a Go duration string that does not parse is shown
	// as it is.
	"dur": func(d any) string {
		switch v := d.(type) {
		case time.Duration:
			return words.Duration(v)
		case string:
			if p, err := time.ParseDuration(v); err == nil {
				return words.Duration(p)
			}
			return v
		}
		return fmt.Sprint(d)
	},
	// count says a number with its noun, singular or plural ("1 shard", "3 shards").
	"count": func(n any, noun string) string {
		switch v := n.(type) {
		case int:
			return words.Count(int64(v), noun)
		case int64:
			return words.Count(v, noun)
		case int32:
			return words.Count(int64(v), noun)
		case uint64:
			return words.Count(int64(v), noun)
		}
		return fmt.Sprint(n) + " " + noun
	},
	"json": func(v any) (template.JS, error) {
		b, err := json.Marshal(v)
		return template.JS(b), err
	},
	"short":     short,
	"hasPrefix": strings.HasPrefix,
	"list":      func(xs ...int) []int { return xs },
	"list2":     func(xs ...string) []string { return xs },
	"usd":       func(f float64) string { return fmt.Sprintf("$%.2f", f) },
	"pct":       func(f float64) float64 { return 100 * f },
	"add": func(xs ...int) int {
		n := 0
		for _, x := range xs {
			n += x
		}
		return n
	},
}

// when writes a time the way every page and every domain message does.
func when(t time.Time) string { return words.Time(t) }

// short is an ID cut to its last 8 hex digits: a UUIDv7 starts with its creation time, so IDs
// made the same minute share their first characters, while the tail is random.
func short(id uuid.UUID) string { s := id.String(); return s[len(s)-8:] }

// names labels a page's assets in a few queries (not one per row).
func (u *UI) names(r *http.Request, ids []uuid.UUID, withNamespace bool) (map[uuid.UUID]string, error) {
	sums, err := u.cfg.Catalog.Summaries(r.Context(), ids)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]string, len(sums))
	for id, s := range sums {
		out[id] = s.Name
		if withNamespace {
			out[id] = s.Namespace + " / " + s.Name
		}
	}
	return out, nil
}
