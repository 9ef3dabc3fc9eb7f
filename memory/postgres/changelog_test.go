package postgres_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// hits is what a search returned, as compared bit for bit: ids and the
// exact scores.
type hit struct {
	id    int64
	score uint64
}

func hitsOf(rs []search.Result) []hit {
	out := make([]hit, len(rs))
	for i, r := range rs {
		out[i] = hit{r.ID, math.Float64bits(r.Score)}
	}
	return out
}

func blobOf(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// Writers on PostgreSQL commit in parallel, so a change log entry can be
// numbered before another that commits first. A transaction held open
// across other writers' commits (as a slow writer holds it) writes an
// archival entry and its vector; the caches of another store catch up
// with the commits around it, then the late commit: both caches must
// take it in, and answer exactly as caches loaded afresh do. (Reading
// the log by sequence number, they skipped the late entry for good.)
func TestCachesTakeInLateCommits(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	emb := search.NewOffline(16)
	opts := &memory.Options{Embedder: emb, VectorCacheBytes: 64 << 20}
	reader, err := memory.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writer, err := memory.Open(ctx, dsn, &memory.Options{Embedder: emb, TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	for _, c := range []string{"a zebra at the harbour", "cranes lift cargo", "the zebra crossing"} {
		if _, err := writer.Agent("ann").Archival().Insert(ctx, memory.ArchivalEntry{Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	if err := storeaccess.Index(reader).WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	if err := storeaccess.Index(reader).WarmVectorCache(ctx); err != nil {
		t.Fatal(err)
	}

	// The slow writer: an entry and its vector, uncommitted.
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	late, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback()
	const lateText = "zebra zebra late in the evening"
	var lateID int64
	if err := late.QueryRowContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('ann', $1, 1, 1) RETURNING id`, lateText).Scan(&lateID); err != nil {
		t.Fatal(err)
	}
	vecs, err := emb.Embed(ctx, []string{lateText})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := late.ExecContext(ctx, `INSERT INTO vec_archival (rowid, owner, embedding) VALUES ($1, 'ann', $2)`, lateID, blobOf(vecs[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := late.ExecContext(ctx, `INSERT INTO search_vec_log (kind, id) VALUES (2, $1)`, lateID); err != nil {
		t.Fatal(err)
	}

	find := func(s *memory.Store, agent string, mode search.Mode) []hit {
		t.Helper()
		rs, err := s.Agent(agent).Archival().Search(ctx, lateText, search.NewOptions().Mode(mode).Limit(10))
		if err != nil {
			t.Fatal(err)
		}
		return hitsOf(rs)
	}
	// Commits after the slow writer's first statement, and the caches
	// catching up with them. (Another agent's: the store writes one
	// agent's archival one transaction at a time, and the slow writer's
	// insert holds ann's storage-usage row.)
	early, err := writer.Agent("bob").Archival().Insert(ctx, memory.ArchivalEntry{Content: "zebra early in the morning"})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []search.Mode{search.FTS, search.Vector} {
		if got := find(reader, "bob", mode); !slices.ContainsFunc(got, func(h hit) bool { return h.id == early.ID }) {
			t.Fatalf("%v: the early commit %d is not found: %v", mode, early.ID, got)
		}
	}
	if err := late.Commit(); err != nil {
		t.Fatal(err)
	}
	stats := storeaccess.Index(reader).CacheStats()
	fresh, err := memory.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := storeaccess.Index(fresh).WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	if err := storeaccess.Index(fresh).WarmVectorCache(ctx); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []search.Mode{search.FTS, search.Vector} {
		got, want := find(reader, "ann", mode), find(fresh, "ann", mode)
		if !slices.Equal(got, want) {
			t.Errorf("%v after the late commit: %v, caches loaded afresh: %v", mode, got, want)
		}
		if !slices.ContainsFunc(got, func(h hit) bool { return h.id == lateID }) {
			t.Errorf("%v: the late commit %d is not found: %v", mode, lateID, got)
		}
	}
	after := storeaccess.Index(reader).CacheStats()
	if after.TextLegs == stats.TextLegs || after.VectorLegs == stats.VectorLegs {
		t.Errorf("the searches ran in SQL, not over the caches: %+v then %+v", stats, after)
	}
}
