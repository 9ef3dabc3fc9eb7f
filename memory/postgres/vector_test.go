package postgres_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// TestVectorEngines: pgvector answers vector searches when the extension
// can be had; a role that may not create it, or VectorCacheBytes, gets the
// in-process KNN; and both kinds of process share one database: rows one
// writes are found by the other.
func TestVectorEngines(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	emb := search.NewOffline(32)
	open := func(dsn string, opts *memory.Options) *memory.Store {
		t.Helper()
		if opts == nil {
			opts = &memory.Options{}
		}
		opts.Embedder = emb
		c, err := memory.Open(ctx, dsn, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	insert := func(c *memory.Store, text string) {
		t.Helper()
		if _, err := c.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	found := func(c *memory.Store, query, want string) {
		t.Helper()
		// Limit 1 among decoys: the KNN's own first answer decides, no
		// exact-distance fallback over a short partition.
		rs, err := c.Agent("ada").Archival().Search(ctx, query, search.NewOptions().Mode(search.Vector).Limit(1))
		if err != nil {
			t.Fatalf("%s search %q: %v", storeaccess.Index(c).VectorEngine(), query, err)
		}
		if len(rs) == 0 || rs[0].Content != want {
			t.Fatalf("%s search %q: got %v, want %q first", storeaccess.Index(c).VectorEngine(), query, rs, want)
		}
	}

	// A role without superuser rights cannot create the extension.
	dsn := srv.NewRoleDatabase(t)
	plain := open(dsn, nil)
	if got := storeaccess.Index(plain).VectorEngine(); got != "in-process" {
		t.Fatalf("non-superuser: VectorEngine = %q", got)
	}
	if why := storeaccess.Index(plain).VectorEngineReason(); why == "" {
		t.Error("non-superuser: no reason given for not using pgvector")
	}
	for _, decoy := range []string{"bicycles need oil each spring", "the garden gate squeaks", "tax forms are due in april"} {
		insert(plain, decoy)
	}
	insert(plain, "the kettle is in the kitchen")
	found(plain, "kettle kitchen", "the kettle is in the kitchen")

	if !srv.HasPGVector(t) {
		t.Skip("pgvector not installed on this server")
	}
	// The same database opened by a superuser: the extension is created,
	// the column added and filled from the stored vectors.
	pgv := open(srv.SuperuserURL(t, dsn), nil)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	unfilled := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM vec_archival WHERE emb IS NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := unfilled(); n != 0 {
		t.Fatalf("rows without emb after the column was added: %d", n)
	}
	if got := storeaccess.Index(pgv).VectorEngine(); got != "pgvector" {
		t.Fatalf("superuser: VectorEngine = %q (%s)", got, storeaccess.Index(pgv).VectorEngineReason())
	}
	found(pgv, "kettle kitchen", "the kettle is in the kitchen")
	// A row written by the process that opened before the column existed
	// (it does not fill emb) is still found through pgvector.
	insert(plain, "the violin case is under the bed")
	if n := unfilled(); n != 1 {
		t.Fatalf("rows without emb after the old process's write: %d, want 1", n)
	}
	found(pgv, "violin case", "the violin case is under the bed")
	if n := unfilled(); n != 0 {
		t.Fatalf("rows without emb after a pgvector search: %d", n)
	}
	// And a row written through pgvector is seen by the in-process KNN.
	insert(pgv, "umbrellas hang by the front door")
	found(plain, "umbrellas front door", "umbrellas hang by the front door")
	// Opened now, the role sees the extension: it writes emb too, and
	// asks for in-process KNN only through VectorCacheBytes.
	late := open(dsn, nil)
	if got := storeaccess.Index(late).VectorEngine(); got != "pgvector" {
		t.Errorf("non-superuser after the extension exists: VectorEngine = %q", got)
	}
	cached := open(dsn, &memory.Options{VectorCacheBytes: 1 << 30})
	if got, why := storeaccess.Index(cached).VectorEngine(), storeaccess.Index(cached).VectorEngineReason(); got != "in-process" || !strings.Contains(why, "VectorCacheBytes") {
		t.Errorf("VectorCacheBytes: VectorEngine = %q (%s)", got, why)
	}
	if err := storeaccess.Index(cached).WarmVectorCache(ctx); err != nil {
		t.Fatal(err)
	}
	insert(cached, "the passport is in the desk drawer")
	found(late, "passport desk drawer", "the passport is in the desk drawer")
	found(pgv, "passport desk drawer", "the passport is in the desk drawer")
	if n := unfilled(); n != 0 {
		t.Fatalf("rows without emb written by the in-process KNN's process: %d", n)
	}
}
