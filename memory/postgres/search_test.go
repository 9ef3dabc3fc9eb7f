package postgres

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// An Index opened without IndexOptions.Write begins its own write
// transactions (it used to send SQLite's BEGIN IMMEDIATE, a syntax error
// on PostgreSQL) and locks what it writes: its first write, recording the
// embedder and setting up the vector tables, holds the whole store, so it
// waits for a store write under way.
func TestIndexWithoutWriteTakesTheStoreLock(t *testing.T) {
	ctx := context.Background()
	b := openTestBackend(t)
	held, release, wrote := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		wrote <- b.Write(ctx, func(*sql.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	type opened struct {
		x   *searchindex.Index
		err error
	}
	done := make(chan opened, 1)
	go func() {
		x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), search.NewOffline(16), nil)
		done <- opened{x, err}
	}()
	select {
	case o := <-done:
		close(release)
		t.Fatalf("NewIndex finished (err %v) while the store's write held the lock", o.err)
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	defer o.x.Close()
	name, dims, err := searchindex.RecordedEmbedder(ctx, b.DB())
	if err != nil || name != search.NewOffline(16).Name() || dims != 16 {
		t.Fatalf("recorded embedder %q (%d dims), %v", name, dims, err)
	}
}

// The dialect's metadata comparison travels the path as arguments and
// compares jsonb values: numbers numerically, strings as text, booleans.
func TestSearchDialectMetadataCompare(t *testing.T) {
	ctx := context.Background()
	b := openTestBackend(t)
	const row = `{"n": 10, "s": "b", "ok": true, "deep": {"k": "v"}}`
	for _, c := range []struct {
		f    search.MetadataFilter
		want bool
	}{
		{search.MetadataFilter{Key: "n", Equals: 10}, true},
		{search.MetadataRangeFilter("n", 9, nil), true},
		{search.MetadataRangeFilter("n", 11, nil), false}, // numerically, not "10" < "11" as text
		{search.MetadataRangeFilter("n", nil, 9.5), false},
		{search.MetadataFilter{Key: "s", Equals: "b"}, true},
		{search.MetadataFilter{Key: "ok", Equals: true}, true},
		{search.MetadataFilter{Key: "ok", Equals: false}, false},
		{search.MetadataFilter{Key: "deep.k", Equals: "v"}, true},
		{search.MetadataFilter{Key: "missing", Equals: "v"}, false},
	} {
		cond, args, err := searchindex.MetadataCondition(b.SearchDialect(), "m", c.f)
		if err != nil {
			t.Fatalf("%+v: %v", c.f, err)
		}
		var got bool
		q := `SELECT COALESCE((SELECT ` + cond + ` FROM (SELECT ?::text AS m) r), FALSE)`
		if err := b.DB().QueryRowContext(ctx, q, append(args, row)...).Scan(&got); err != nil {
			t.Fatalf("%+v: %s: %v", c.f, q, err)
		}
		if got != c.want {
			t.Errorf("%+v: %v, want %v", c.f, got, c.want)
		}
	}
}

// openTestBackend opens a backend on a fresh database of the test server,
// closed when the test ends.
func openTestBackend(t *testing.T) *Backend {
	t.Helper()
	b, err := Open(context.Background(), pgtest.Start(t).NewDatabase(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
