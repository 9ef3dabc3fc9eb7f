package migrations_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/engram-go/engram/migrations"
)

// A database records only how many migrations it applied, so a released
// file that is renamed, renumbered or edited would leave existing
// databases at a version meaning something else: every file released
// (testdata/released.txt: engine/name and SHA-256, in order) must be
// embedded unchanged, at the same position. Append new files' lines here
// when they are released; never change a line.
func TestReleasedFiles(t *testing.T) {
	f, err := os.Open("testdata/released.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sets := map[string]func() ([]migrations.Migration, error){"sqlite": migrations.SQLite, "postgres": migrations.Postgres}
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		file, sum, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		engine, name := path.Split(file)
		engine = strings.TrimSuffix(engine, "/")
		all, err := sets[engine]()
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		i := seen[engine]
		seen[engine]++
		if i >= len(all) {
			t.Errorf("%s: released as version %d, not embedded", file, i+1)
			continue
		}
		m := all[i]
		got := sha256.Sum256([]byte(m.SQL))
		if m.Name != name || m.Version != i+1 || hex.EncodeToString(got[:]) != sum {
			t.Errorf("version %d of %s is %s (sha256 %x), released as %s (%s)", i+1, engine, m.Name, got, name, sum)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Versions a database may already be at.
	if seen["sqlite"] < 14 || seen["postgres"] < 9 {
		t.Errorf("released: %d SQLite and %d PostgreSQL files, want at least 14 and 9", seen["sqlite"], seen["postgres"])
	}
}

func TestSetsAreSeparate(t *testing.T) {
	for _, tc := range []struct {
		engine string
		set    func() ([]migrations.Migration, error)
		marker string // a statement only that engine's dialect has
	}{
		{"sqlite", migrations.SQLite, "VIRTUAL TABLE"},
		{"postgres", migrations.Postgres, "BIGSERIAL"},
	} {
		all, err := tc.set()
		if err != nil {
			t.Fatalf("%s: %v", tc.engine, err)
		}
		var joined strings.Builder
		for _, m := range all {
			joined.WriteString(m.SQL)
		}
		if !strings.Contains(strings.ToUpper(joined.String()), tc.marker) {
			t.Errorf("%s migrations lack %q: not that engine's files", tc.engine, tc.marker)
		}
	}
}
