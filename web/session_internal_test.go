package web

import "testing"

// TestLocalPath: a sign-in returns only to a clean path of this site; every form a browser
// could read as another origin (or a script) goes home instead.
func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ next, want string }{
		{"/scans", "/scans"},
		{"/audit?actor=x", "/audit?actor=x"},
		{"/?q=orders%20table", "/?q=orders%20table"},
		{"/assets/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70#names", "/assets/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70#names"},
		{"/", "/"},
		{"", "/"},
		{"//evil", "/"},
		{"//evil.example/x", "/"},
		{"/\\evil", "/"},
		{"/\\/evil", "/"},
		{"/\t/evil", "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil", "/"},
		{"/\r\n/evil", "/"},
		{"/ /evil", "/"},
		{"/x\u0085y", "/"},
		{"/%09/evil", "/"},
		{"/%0a/evil", "/"},
		{"/%2F/evil", "/"},
		{"/%5Cevil", "/"},
		{"/%zz", "/"},
		{"%2F%09%2Fevil.example", "/"},
		{"https://evil", "/"},
		{"https://evil.example/", "/"},
		{"http:/evil", "/"},
		{"javascript:alert(1)", "/"},
		{"javascript://%0aalert(1)", "/"},
		{"evil.example", "/"},
		{"/signin?next=//evil", "/"},
		{"/x\xff", "/"},
	} {
		if got := localPath(tc.next); got != tc.want {
			t.Errorf("localPath(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
}
