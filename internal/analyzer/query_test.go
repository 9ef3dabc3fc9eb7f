package analyzer

import (
	"slices"
	"testing"
)

// TestQueryTermsKeepMayBesideANumber: "may" is a stopword, but beside a
// number it names the month a message's date or a metadata date holds.
func TestQueryTermsKeepMayBesideANumber(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"What did we do on 8 May, 2023?", []string{"8", "may", "2023"}},
		{"May 2023", []string{"may", "2023"}},
		{"in May 8th", []string{"may", "8th"}},
		{"on May 8", []string{"may", "8"}},
		{"you may go home", []string{"go", "home"}},
		{"may be may", []string{"may", "be"}},
	} {
		if got := QueryTerms(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("QueryTerms(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
}
