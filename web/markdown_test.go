package web

import (
	"strings"
	"testing"
)

// TestMarkdownIsInert: raw HTML is dropped and links to schemes other than http, https and
// mailto come out as plain text, however they are spelled.
func TestMarkdownIsInert(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string   // in the output
		never     []string // never in the output
	}{
		{"Script", "<script>alert(1)</script>", "raw HTML omitted", []string{"<script"}},
		{"InlineHTML", "a <img src=x onerror=alert(1)> b", "<p>a", []string{"<img", "onerror"}},
		{"RawLink", `<a href="javascript:alert(1)">x</a>`, "", []string{"<a", "javascript:"}},
		{"JavascriptLink", "[x](javascript:alert(1))", "<p>x</p>", []string{"<a", "javascript:"}},
		{"MixedCase", "[x](JaVaScRiPt:alert(1))", "<p>x</p>", []string{"<a", "alert"}},
		{"Entity", "[x](&#106;avascript:alert(1))", "<p>x</p>", []string{"<a", "alert"}},
		{"Spaces", "[x]( javascript:alert(1) )", "<p>x</p>", []string{"<a", "alert"}},
		{"Autolink", "<javascript:alert(1)>", "", []string{"<a", "href"}},
		{"Data", "[x](data:text/html;base64,PHNjcmlwdD4=)", "<p>x</p>", []string{"<a", "data:"}},
		{"Vbscript", "[x](vbscript:msgbox)", "<p>x</p>", []string{"<a"}},
		{"ImageScheme", "![alt](javascript:alert(1))", "alt", []string{"<img", "javascript:"}},
		{"Reference", "[x][r]\n\n[r]: javascript:alert(1)", "<p>x</p>", []string{"<a", "javascript:"}},
		{"HTTPS", "[ok](https://example.com/?a=1&b=2)", `<a href="https://example.com/?a=1&amp;b=2" rel="nofollow noopener">ok</a>`, nil},
		{"Relative", "[asset](/assets/x)", `<a href="/assets/x" rel="nofollow noopener">asset</a>`, nil},
		{"Mailto", "[mail](mailto:data@example.com)", `href="mailto:data@example.com"`, nil},
		{"Linkify", "see https://example.com now", `<a href="https://example.com">https://example.com</a>`, nil},
		{"Table", "| a | b |\n|---|---|\n| 1 | 2 |", "<table>", nil},
		{"Empty", "  \n", "", []string{"<p>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(markdown(tc.src))
			if !strings.Contains(got, tc.want) {
				t.Errorf("markdown(%q) = %q, want it to contain %q", tc.src, got, tc.want)
			}
			for _, n := range tc.never {
				if strings.Contains(strings.ToLower(got), strings.ToLower(n)) {
					t.Errorf("markdown(%q) = %q, holds %q", tc.src, got, n)
				}
			}
		})
	}
}
