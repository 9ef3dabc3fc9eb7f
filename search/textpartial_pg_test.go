package search_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	pgbackend "github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/search"
)

// TestTextCachePartialPostgres holds a partial text cache on PostgreSQL
// (whose dialect has no TextStats: the cache computes the store-wide
// statistics itself, in background passes) to a whole text cache of the
// same store, bit for bit (ids, order, scores), across a random history of
// several agents' writes: inserts, supersessions, message appends (a
// neighbour's context column filled), deletes, hand edits of indexed
// text, blocks created, edited, deleted, shared and unshared. Bounds small
// enough that partitions are evicted and loaded again. A leg the partial
// cache hands to SQL (statistics not ready, an owner too big) ranks with
// the tsvector query, not comparable: such searches are counted, and must
// be few; under the large bound, none.
func TestTextCachePartialPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	store, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	b, err := pgbackend.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	seed := uint64(11)
	if v := os.Getenv("FUZZSEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	r := rand.New(rand.NewPCG(seed, 35))
	vocab := make([]string, 30)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%d", i)
	}
	text := func() string {
		w := make([]string, 1+r.IntN(12))
		for i := range w {
			w[i] = vocab[min(r.IntN(len(vocab)), r.IntN(len(vocab)))]
		}
		return strings.Join(w, " ")
	}
	var agents []string
	for i := range 8 {
		agents = append(agents, fmt.Sprint("agent-", i))
	}
	pick := func() string { return agents[r.IntN(len(agents))] }
	labels := map[string][]string{} // an agent's blocks
	newBlock := func(agent string) {
		label := fmt.Sprint("blk", len(labels[agent]), "-", r.IntN(1000))
		if _, err := store.CreateBlock(ctx, agent, memory.BlockSpec{Label: label, Value: text(), Permission: blocks.Admin}); err != nil {
			t.Fatal(err)
		}
		labels[agent] = append(labels[agent], label)
	}
	for _, a := range agents {
		for range 10 {
			if _, err := store.InsertArchival(ctx, a, memory.ArchivalEntry{Content: text()}); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			var msgs []memory.Message
			for range 4 {
				msgs = append(msgs, memory.Message{Role: memory.RoleUser, Content: text(), BatchID: "b1"})
			}
			if _, err := store.AppendMessages(ctx, a, msgs); err != nil {
				t.Fatal(err)
			}
		}
		newBlock(a)
	}
	open := func(limit int64, partial bool) *search.Index {
		x, err := search.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &search.IndexOptions{Write: b.Write, TextCacheBytes: limit, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		if partial {
			search.ForceTextPartial(x)
		}
		return x
	}
	whole := open(1<<30, false)
	if err := whole.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	limits := []int64{48 << 10, 1 << 20}
	var cached []*search.Index
	for _, limit := range limits {
		cached = append(cached, open(limit, true))
	}
	warm := func(x *search.Index) {
		if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, search.ErrCacheBudget) {
			t.Fatal(err)
		}
	}
	for _, x := range cached {
		warm(x)
		if partial, _, _ := search.TextCachePartial(x); !partial {
			t.Fatal("a PostgreSQL text cache forced partial is not partial")
		}
	}
	raw := func(q string, args ...any) {
		t.Helper()
		if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	randomID := func(table, agent string) (int64, bool) {
		var id int64
		err := b.DB().QueryRowContext(ctx, `SELECT id FROM `+table+` WHERE agent = ? ORDER BY random() LIMIT 1`, agent).Scan(&id)
		return id, err == nil
	}
	ops := []func(){
		func() { // an insert, sometimes into a conversation (indexed with its neighbours)
			e := memory.ArchivalEntry{Content: text()}
			if r.IntN(3) == 0 {
				e.Metadata = map[string]any{"conversation": fmt.Sprint("c", r.IntN(2))}
			}
			if _, err := store.InsertArchival(ctx, pick(), e); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			a := pick()
			var id int64
			if err := b.DB().QueryRowContext(ctx, `SELECT id FROM archival WHERE agent = ? AND valid_to IS NULL ORDER BY random() LIMIT 1`, a).Scan(&id); err != nil {
				return
			}
			if _, err := store.SupersedeArchival(ctx, a, id, memory.ArchivalEntry{Content: text()}); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			a := pick()
			if id, ok := randomID("archival", a); ok {
				if err := store.DeleteArchival(ctx, a, id); err != nil && !errors.Is(err, memory.ErrNotFound) {
					t.Fatal(err)
				}
			}
		},
		func() { // appended to the open batch: the last message's context_after fills
			var msgs []memory.Message
			for range 1 + r.IntN(2) {
				msgs = append(msgs, memory.Message{Role: memory.RoleAssistant, Content: text(), BatchID: "b1"})
			}
			if _, err := store.AppendMessages(ctx, pick(), msgs); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			if id, ok := randomID("archival", pick()); ok {
				raw(`UPDATE archival SET content = ? WHERE id = ?`, text(), id)
			}
		},
		func() {
			if id, ok := randomID("messages", pick()); ok {
				raw(`UPDATE messages SET content = ? WHERE id = ?`, text(), id)
			}
		},
		func() {
			if id, ok := randomID("messages", pick()); ok {
				raw(`DELETE FROM messages WHERE id = ?`, id)
			}
		},
		func() { newBlock(pick()) },
		func() {
			a := pick()
			if ls := labels[a]; len(ls) > 0 {
				if err := store.UpdateBlockText(ctx, a, ls[r.IntN(len(ls))], text()); err != nil {
					t.Fatal(err)
				}
			}
		},
		func() {
			a := pick()
			if ls := labels[a]; len(ls) > 1 {
				i := r.IntN(len(ls))
				if err := store.DeleteBlock(ctx, a, ls[i]); err != nil {
					t.Fatal(err)
				}
				labels[a] = append(ls[:i:i], ls[i+1:]...)
			}
		},
		func() {
			a, with := pick(), pick()
			if ls := labels[a]; len(ls) > 0 && a != with {
				_ = store.ShareBlock(ctx, a, ls[r.IntN(len(ls))], with, blocks.ReadOnly)
			}
		},
		func() {
			a, with := pick(), pick()
			if ls := labels[a]; len(ls) > 0 && a != with {
				_ = store.UnshareBlock(ctx, a, ls[r.IntN(len(ls))], with)
			}
		},
	}
	shapes := []func() *search.Options{
		func() *search.Options { return search.NewOptions().ContentTypes(search.Archival) },
		func() *search.Options { return search.NewOptions().ContentTypes(search.Messages) },
		func() *search.Options { return search.NewOptions().ContentTypes(search.Blocks) },
		func() *search.Options {
			return search.NewOptions().ContentTypes(search.Archival).IncludeSuperseded(true)
		},
		func() *search.Options { return search.NewOptions() },
	}
	compared, results := make([]int, len(cached)), 0
	fellBack := make([]int, len(cached))
	for round := range 120 {
		for range 1 + r.IntN(4) {
			ops[r.IntN(len(ops))]()
		}
		// A search over blocks indexes their new text first (logged: the
		// partial caches' block statistics go); then the statistics the
		// writes dropped are computed again.
		if _, err := whole.Search(ctx, "w1", search.Scope{Agent: agents[0]}, search.NewOptions().ContentTypes(search.Blocks).Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
		for _, x := range cached {
			warm(x)
		}
		for range 3 {
			agent := pick()
			q := vocab[r.IntN(len(vocab))] + " " + vocab[r.IntN(len(vocab))]
			opts := func() *search.Options { return shapes[r.IntN(len(shapes))]().Mode(search.FTS).Limit(10) }
			o := opts()
			legs := search.TextCacheAnswers(whole)
			want, err := whole.Search(ctx, q, search.Scope{Agent: agent}, o)
			if err != nil {
				t.Fatal(err)
			}
			legs = search.TextCacheAnswers(whole) - legs
			if legs == 0 {
				t.Fatalf("round %d: the whole cache ranked %q in SQL", round, q)
			}
			for i, x := range cached {
				before := search.TextCacheAnswers(x)
				got, err := x.Search(ctx, q, search.Scope{Agent: agent}, o)
				if err != nil {
					t.Fatal(err)
				}
				if search.TextCacheAnswers(x)-before != legs {
					fellBack[i]++
					continue
				}
				if err := sameBits(want, got); err != nil {
					t.Fatalf("round %d bound %d agent %q %q: %v\nwhole   %v\npartial %v", round, limits[i], agent, q, err, keys(want), keys(got))
				}
				compared[i]++
				results += len(got)
			}
		}
	}
	for i, x := range cached {
		partial, parts, bytes := search.TextCachePartial(x)
		t.Logf("bound %d: partial %v, %d partitions, %d bytes; %d searches compared, %d ranked in SQL; %d statistics passes",
			limits[i], partial, parts, bytes, compared[i], fellBack[i], search.TextStatsPasses(x))
		if !partial {
			t.Fatalf("bound %d: not partial", limits[i])
		}
		if bytes > limits[i] {
			t.Fatalf("bound %d: holds %d bytes", limits[i], bytes)
		}
		if fellBack[i] > compared[i]/5 {
			t.Fatalf("bound %d: %d searches ranked in SQL, %d compared", limits[i], fellBack[i], compared[i])
		}
	}
	if fellBack[len(cached)-1] != 0 {
		t.Fatalf("under the large bound %d searches ranked in SQL", fellBack[len(cached)-1])
	}
	t.Logf("%d results compared", results)
}

// sameBits: the same results in the same order with the same scores, to
// the bit.
func sameBits(want, got []search.Result) error {
	if len(want) != len(got) {
		return fmt.Errorf("%d results, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if key(w) != key(g) {
			return fmt.Errorf("result %d: %s, want %s", i, key(g), key(w))
		}
		if math.Float64bits(w.Score) != math.Float64bits(g.Score) || math.Float64bits(w.Source.BM25) != math.Float64bits(g.Source.BM25) {
			return fmt.Errorf("result %d (%s): score %.17g bm25 %.17g, want %.17g %.17g", i, key(w), g.Score, g.Source.BM25, w.Score, w.Source.BM25)
		}
	}
	return nil
}
