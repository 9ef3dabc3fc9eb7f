package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// TestCacheOptions: a one-shot command keeps no search caches; a serving
// one prewarms them, sized by --text-cache and --vector-cache, with the
// statistics drift --stats-drift sets (0.005 without it, 0 for exact), and
// bounds its documents by --doc-cache.
func TestCacheOptions(t *testing.T) {
	zero := 0.0
	for _, tc := range []struct {
		name string
		a    app
		want memory.Options
	}{
		{"one-shot", app{}, memory.Options{TextCacheBytes: -1, VectorCacheBytes: -1}},
		{"serving", app{serving: true, textCache: 1 << 20}, memory.Options{Prewarm: true, TextCacheBytes: 1 << 20, TextStatsDrift: servingStatsDrift}},
		{"serving, documents bounded", app{serving: true, docCache: 64 << 20}, memory.Options{Prewarm: true, CacheBytes: 64 << 20, TextStatsDrift: servingStatsDrift}},
		{"serving, exact statistics", app{serving: true, statsDrift: &zero}, memory.Options{Prewarm: true}},
	} {
		var got memory.Options
		tc.a.cacheOptions(&got)
		if got.Prewarm != tc.want.Prewarm || got.TextCacheBytes != tc.want.TextCacheBytes || got.VectorCacheBytes != tc.want.VectorCacheBytes || got.TextStatsDrift != tc.want.TextStatsDrift || got.CacheBytes != tc.want.CacheBytes {
			t.Errorf("%s: Prewarm %v, TextCacheBytes %d, VectorCacheBytes %d, TextStatsDrift %v, CacheBytes %d; want %v, %d, %d, %v, %d", tc.name,
				got.Prewarm, got.TextCacheBytes, got.VectorCacheBytes, got.TextStatsDrift, got.CacheBytes,
				tc.want.Prewarm, tc.want.TextCacheBytes, tc.want.VectorCacheBytes, tc.want.TextStatsDrift, tc.want.CacheBytes)
		}
	}
}

// TestServeStatsDriftFlag: --stats-drift takes a share between 0 and 1;
// anything else is refused before the store opens, naming the flag.
func TestServeStatsDriftFlag(t *testing.T) {
	for _, v := range []string{"2", "-0.1", "NaN", "+Inf", "half"} {
		db := filepath.Join(t.TempDir(), "x.db")
		_, errs, code := cli(t, db, "", "serve", "--addr", "127.0.0.1:0", "--stats-drift", v)
		if code == 0 || !strings.Contains(errs, "stats-drift") {
			t.Errorf("--stats-drift %s: exit %d, %s", v, code, errs)
		}
		if _, err := os.Stat(db); err == nil {
			t.Errorf("--stats-drift %s: the store was created", v)
		}
	}
}
