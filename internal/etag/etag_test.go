package etag

import "testing"

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		name, header, etag string
		want               bool
	}{
		{"Same", `"3"`, `"3"`, true},
		{"Other", `"4"`, `"3"`, false},
		{"NotASubstring", `"12"`, `"1"`, false},
		{"NotASubstringTheOtherWay", `"1"`, `"12"`, false},
		{"UnquotedIsNotATag", `3`, `"3"`, false},
		{"InAList", `"1", "2", "3"`, `"3"`, true},
		{"ListWithoutSpaces", `"1","3"`, `"3"`, true},
		{"ListWithTabsAndEmptyItems", "\"1\" ,\t, \"3\"", `"3"`, true},
		{"NotInTheList", `"1", "2", "12"`, `"3"`, false},
		{"WeakMatchesStrong", `W/"3"`, `"3"`, true},
		{"StrongMatchesWeak", `"3"`, `W/"3"`, true},
		{"WeakInAList", `"1", W/"3"`, `"3"`, true},
		{"CommaInsideATag", `"a,b"`, `"a,b"`, true},
		{"CommaInsideATagIsNotAList", `"a,b"`, `"b"`, false},
		{"Star", `*`, `"3"`, true},
		{"StarWithSpaces", ` * `, `"3"`, true},
		{"StarInAListIsMalformed", `"1", *`, `"3"`, false},
		{"Empty", ``, `"3"`, false},
		{"Unterminated", `"3`, `"3"`, false},
		{"GarbageAfterATag", `"1"x, "3"`, `"3"`, false},
		{"TagOfTheServerMalformed", `"3"`, `3`, false},
		{"QuotedEmpty", `""`, `""`, true},
		{"MetadataLocation", `"s3://b/t/metadata/00001.json", "s3://b/t/metadata/00002.json"`, `"s3://b/t/metadata/00002.json"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches(tc.header, tc.etag); got != tc.want {
				t.Errorf("Matches(%q, %q) = %v, want %v", tc.header, tc.etag, got, tc.want)
			}
		})
	}
}
