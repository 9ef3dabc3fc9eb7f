package memory_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory/sqlite"
)

// template is a SQLite store file migrated once per test binary: a test's
// new store file starts as a copy of it, which Open then finds at the
// latest schema version. Migrating from nothing costs ~150 ms, and ~5 s
// under the race detector, for each of the package's hundreds of stores.
var template struct {
	once sync.Once
	dir  string
	data []byte
	err  error
}

func TestMain(m *testing.M) {
	code := pgtest.Main(m) // the PostgreSQL tests share one cluster
	if template.dir != "" {
		os.RemoveAll(template.dir)
	}
	os.Exit(code)
}

// fresh returns target, having first written the migrated template there
// when target names a SQLite file that does not exist yet in a directory
// that does. Anything else (a PostgreSQL URL, ":memory:", a "file:" URI,
// an existing file, a missing directory) is left to Open as it is.
func fresh(target string) string {
	if !filepath.IsAbs(target) || strings.Contains(target, "=") {
		return target
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		return target
	}
	if st, err := os.Stat(filepath.Dir(target)); err != nil || !st.IsDir() {
		return target
	}
	template.once.Do(func() {
		if template.dir, template.err = os.MkdirTemp("", "engram-memory-test-"); template.err != nil {
			return
		}
		src := filepath.Join(template.dir, "migrated.db")
		b, err := sqlite.Open(context.Background(), src, nil)
		if err == nil {
			err = b.Close()
		}
		if err == nil {
			template.data, err = os.ReadFile(src)
		}
		template.err = err
	})
	if template.err == nil {
		// A failed write leaves Open to make the store from nothing.
		_ = os.WriteFile(target, template.data, 0o600)
	}
	return target
}
