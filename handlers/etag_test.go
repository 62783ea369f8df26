package handlers_test

import (
	"net/http"
	"testing"
)

// TestIfNoneMatchLists: an asset answers 304 when its ETag is anywhere in an If-None-Match list
// (one line or several, weak or strong, or "*"), and 200 when only something that contains it
// as text is there.
func TestIfNoneMatchLists(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		a := s.createAsset(t, "w", "conditional")
		tag := s.must(t, 200, req{method: "GET", path: "/api/v1/assets/" + a.ID}).header.Get("ETag")
		if tag != `"1"` {
			t.Fatalf("ETag %s, want \"1\"", tag)
		}
		for _, tc := range []struct {
			name  string
			lines []string
			want  int
		}{
			{"OneTag", []string{`"1"`}, 304},
			{"List", []string{`"7", "1"`}, 304},
			{"ListWithoutSpaces", []string{`"7","1","9"`}, 304},
			{"Weak", []string{`W/"1"`}, 304},
			{"Star", []string{`*`}, 304},
			{"ListOnTwoLines", []string{`"7"`, `"8", "1"`}, 304},
			{"OtherTags", []string{`"7", "11", "10"`}, 200},
			{"TagInsideGarbage", []string{`x"1"x`}, 200},
			{"Unquoted", []string{`1`}, 200},
		} {
			t.Run(tc.name, func(t *testing.T) {
				hr, err := http.NewRequest("GET", s.URL+"/api/v1/assets/"+a.ID, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range tc.lines {
					hr.Header.Add("If-None-Match", l)
				}
				res, err := s.client.Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != tc.want {
					t.Fatalf("If-None-Match %q = %d, want %d", tc.lines, res.StatusCode, tc.want)
				}
				if tc.want == 304 && res.Header.Get("ETag") != tag {
					t.Fatalf("304 with ETag %q, want %s", res.Header.Get("ETag"), tag)
				}
			})
		}
	})
}
