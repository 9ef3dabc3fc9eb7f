package searchindex_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestTextCachePartialLoadsUnderWrites: first searches of several owners
// at once (partition loads slowed by a hook so that they overlap one
// another, catch-ups and writes: inserts, edits, deletes, supersessions,
// moves between owners) leave every partition ranking as SQL does once
// the writes stop.
func TestTextCachePartialLoadsUnderWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow"}
	const owners = 4
	inTx(t, db, func(tx execer) {
		for o := range owners {
			for i := range 120 {
				insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("agent", o), Content: words[(o+i)%6] + " " + words[i%5] + " " + words[(i/5)%6]})
			}
		}
	})
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	writes := []string{
		`INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from) VALUES ('agent%d', 'wing shock fresh', '{}', '[]', '', 0, 0)`,
		`UPDATE archival SET content = 'mach flow edited' WHERE id = (SELECT id FROM archival WHERE agent = 'agent%d' ORDER BY random() LIMIT 1)`,
		`DELETE FROM archival WHERE id = (SELECT id FROM archival WHERE agent = 'agent%d' ORDER BY random() LIMIT 1)`,
		`UPDATE archival SET valid_to = created_at WHERE id = (SELECT id FROM archival WHERE agent = 'agent%d' ORDER BY random() LIMIT 1)`,
		`UPDATE archival SET agent = 'agent%d' WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`,
	}
	for round := range 6 {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 64 << 20, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		searchindex.ForceTextPartial(x)
		_ = x.WarmTextCache(ctx)
		searchindex.SetTextLoadHook(x, func(ctx context.Context, _ search.ContentType, _ string) {
			select {
			case <-time.After(time.Duration(rand.IntN(15)) * time.Millisecond):
			case <-ctx.Done():
			}
		})
		stop := make(chan struct{})
		var wg, ww sync.WaitGroup
		ww.Add(1)
		go func() {
			defer ww.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				q := fmt.Sprintf(writes[rand.IntN(len(writes))], rand.IntN(owners))
				if _, err := other.ExecContext(ctx, q); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		for range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					agent := fmt.Sprint("agent", rand.IntN(owners))
					if _, err := x.Search(ctx, words[rand.IntN(6)], search.Scope{Agent: agent}, archivalFTS()); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		close(stop)
		ww.Wait()
		answers := searchindex.TextCacheAnswers(x)
		for o := range owners {
			agent := fmt.Sprint("agent", o)
			for _, q := range []string{"wing", "shock fresh", "mach flow", "layer"} {
				got, err := x.Search(ctx, q, search.Scope{Agent: agent}, archivalFTS())
				if err != nil {
					t.Fatal(err)
				}
				want, err := sqlx.Search(ctx, q, search.Scope{Agent: agent}, archivalFTS())
				if err != nil {
					t.Fatal(err)
				}
				if err := sameRanking(want, got); err != nil || len(want) != len(got) {
					t.Fatalf("round %d, %s %q: %v\nSQL   %v\ncache %v", round, agent, q, err, keys(want), keys(got))
				}
			}
		}
		if n := searchindex.TextCacheAnswers(x) - answers; n < owners*4 {
			t.Fatalf("round %d: the cache answered %d of %d legs", round, n, owners*4)
		}
		x.Close()
	}
}
