package searchindex_test

import (
	"context"
	"errors"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// A resident PostgreSQL partition regrouped (terms freed, their ids
// reused by new terms), then rows holding the reused ids rewritten,
// deleted and moved to another resident owner and back: the partial
// cache's own statistics, moved by the rows' terms as the partition
// names them, equal a fresh count and a whole cache's after each
// catch-up.
func TestTextStatsAfterTermIDsReused(t *testing.T) {
	ctx := context.Background()
	p := newPGPartial(t)
	raw := p.raw
	raw(`INSERT INTO archival (agent, content, created_at, valid_from) SELECT 'agent-0', 'common uniq' || i || ' w' || (i % 7), 1, 1 FROM generate_series(1, 3000) i`)
	raw(`INSERT INTO archival (agent, content, created_at, valid_from) SELECT 'agent-1', 'common other' || i, 1, 1 FROM generate_series(1, 50) i`)
	whole := p.whole()
	x := p.index(64<<20, true)
	searchindex.SetTextCatchUpMax(x, 1<<20)
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)
	// Every write here is to rows of resident partitions: once computed,
	// the statistics follow each one rather than drop (ready).
	ready := false
	step := func(name string) {
		t.Helper()
		for _, y := range []*searchindex.Index{whole, x} {
			for _, a := range []string{"agent-0", "agent-1"} {
				if _, err := y.Search(ctx, "common", search.Scope{Agent: a}, opts); err != nil {
					t.Fatal(err)
				}
			}
		}
		now, err := searchindex.TextStatsDiff(ctx, x, whole, search.Archival)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ready && !now {
			t.Fatalf("%s: the statistics were dropped, not moved", name)
		}
		ready = now
	}
	step("loaded")
	_ = x.WarmTextCache(ctx)
	step("warm")
	if !ready {
		t.Fatal("no statistics after the warm-up")
	}
	raw(`DELETE FROM archival WHERE agent = 'agent-0' AND content LIKE 'common uniq%' AND id % 3 <> 0`)
	step("deleted two thirds")
	raw(`INSERT INTO archival (agent, content, created_at, valid_from) SELECT 'agent-0', 'common fresh' || i || ' w' || (i % 5), 1, 1 FROM generate_series(1, 600) i`)
	step("fresh terms")
	_ = x.WarmTextCache(ctx)
	step("warm again")
	raw(`UPDATE archival SET content = 'common rewritten' || (id % 11) WHERE agent = 'agent-0' AND content LIKE 'common fresh%' AND id % 4 = 0`)
	step("rewritten")
	raw(`DELETE FROM archival WHERE agent = 'agent-0' AND content LIKE 'common fresh%' AND id % 4 = 1`)
	step("fresh deleted")
	raw(`UPDATE archival SET agent = 'agent-1' WHERE agent = 'agent-0' AND content LIKE 'common fresh%' AND id % 4 = 2`)
	step("moved to agent-1")
	raw(`UPDATE archival SET agent = 'agent-0', content = content || ' back' WHERE agent = 'agent-1' AND content LIKE 'common fresh%' AND id % 8 = 2`)
	step("moved back, rewritten")
	raw(`DELETE FROM archival WHERE agent = 'agent-1' AND content LIKE 'common fresh%'`)
	step("moved rows deleted")
}
