package searchindex_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// TestDriftPassOvertakenByOwnDelete: a pass overtaken by this process's
// own delete of a row of a resident partition replays the changes since
// its snapshot exactly or not at all (with no partition to tell a row's
// counted version, replayStats cannot follow the delete), even with a
// drift share: it is discarded and tried again, and the statistics come
// out exact, not drifting below the share where no pass would follow.
func TestDriftPassOvertakenByOwnDelete(t *testing.T) {
	p, _ := newPGWriters(t)
	ctx := context.Background()
	x, err := searchindex.NewIndex(ctx, p.b.DB(), p.b.SearchDialect(), nil,
		&searchindex.IndexOptions{Write: p.b.Write, TextCacheBytes: 1 << 22, VectorCacheBytes: -1, TextStatsDrift: 0.005})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	searchindex.SetTextStatsRest(x, false)
	searchindex.SetTextBackoff(x, 20*time.Millisecond) // (an overtaken pass is tried again after it)
	if err := x.WarmTextCache(ctx); err != nil {
		t.Logf("warm: %v", err) // (partial by design)
	}
	driftSearch(t, x, "crane cargo", "agent-3") // agent-3 resident
	// Start a pass and hold it past its snapshot.
	hold, counted := make(chan struct{}), make(chan struct{}, 1)
	searchindex.SetTextStatsHook(x, func(ctx context.Context, _ search.ContentType) {
		select {
		case counted <- struct{}{}:
		default:
		}
		select {
		case <-hold:
		case <-ctx.Done():
		}
	})
	var id int64
	if err := p.b.DB().QueryRowContext(ctx, `SELECT min(id) FROM archival WHERE agent = 'writer-5'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// Foreign rewrites drift past the share (3 rows each): a pass starts.
	for range 6 {
		p.raw(`UPDATE archival SET content = content || ' x' WHERE id = ?`, id)
		driftSearch(t, x, "crane cargo", "agent-3")
	}
	<-counted
	t.Logf("pass held; drift %d", searchindex.TextStatsDrift(x, search.Archival))
	var own int64
	if err := p.b.DB().QueryRowContext(ctx, `SELECT min(id) FROM archival WHERE agent = 'agent-3'`).Scan(&own); err != nil {
		t.Fatal(err)
	}
	x.HoldOwner(ctx, search.Archival, "agent-3")
	if err := p.store.Agent("agent-3").Archival().Delete(ctx, own); err != nil {
		t.Fatal(err)
	}
	driftSearch(t, x, "crane cargo", "agent-3")
	close(hold)
	// The overtaken pass is discarded; the next search of the still
	// drifting statistics starts another, which makes them exact.
	for i := 0; i < 50 && searchindex.TextStatsDrift(x, search.Archival) != 0; i++ {
		time.Sleep(30 * time.Millisecond)
		searchindex.WaitTextStatsPasses(x)
		driftSearch(t, x, "crane cargo", "agent-3")
	}
	whole := p.whole()
	want, _ := driftSearch(t, whole, "crane cargo", "agent-3")
	got, inCache := driftSearch(t, x, "crane cargo", "agent-3")
	drift := searchindex.TextStatsDrift(x, search.Archival)
	t.Logf("after the pass: drift %d, passes %d, cache %v", drift, searchindex.TextStatsPasses(x), inCache)
	if err := sameBits(want, got); err != nil || drift != 0 {
		t.Fatalf("after a pass overtaken only by this process's own delete: drift %d, %v", drift, err)
	}
}
