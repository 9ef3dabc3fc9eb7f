package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
)

// "export" copies every agent; "export --agent NAME" only that agent's
// blocks, and a blank --agent is refused rather than read as "everyone".
func TestCLIExportScope(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--value", "I am Ada.")
	ok(t, db, "block", "create", "--agent", "bob", "--label", "persona", "--value", "I am Bob.")
	owners := func(args ...string) []string {
		t.Helper()
		var d struct {
			Blocks []struct{ Owner string } `json:"blocks"`
		}
		if err := json.Unmarshal([]byte(ok(t, db, args...)), &d); err != nil {
			t.Fatalf("engram %v: %v", args, err)
		}
		var out []string
		for _, b := range d.Blocks {
			out = append(out, b.Owner)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"export"}, []string{"ada", "bob"}},
		{[]string{"export", "--agent", "ada"}, []string{"ada"}},
		{[]string{"export", "--agent", "bob"}, []string{"bob"}},
	} {
		if got := owners(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("engram %v: blocks of %v, want %v", tc.args, got, tc.want)
		}
	}
	if _, errs, code := cli(t, db, "", "export", "--agent", " "); code == 0 {
		t.Errorf("engram export --agent ' ': exit 0, want an error (%s)", errs)
	}
}
