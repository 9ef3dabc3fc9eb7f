package searchindex_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// openDB opens a migrated database file in a temporary directory.
func openDB(tb testing.TB) *sql.DB {
	tb.Helper()
	return openDBAt(tb, filepath.Join(tb.TempDir(), "engram.db"))
}

func openDBAt(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		copyMigrated(tb, path)
	}
	db, err := sql.Open(sqlitedriver.Name, testDSN(path))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { closeDB(tb, db) })
	if _, _, err := sqlite.Migrate(context.Background(), db); err != nil {
		tb.Fatal(err)
	}
	return db
}

// closeDB closes db and waits until its last connection has closed: an
// Index a test leaves open may have a load holding one, released (and
// closed) after db.Close returns, and SQLite's last close writes beside
// the database file, in the directory the test's TempDir is removing
// ("directory not empty").
func closeDB(tb testing.TB, db *sql.DB) {
	db.Close()
	for deadline := time.Now().Add(10 * time.Second); db.Stats().OpenConnections > 0; {
		if time.Now().After(deadline) {
			tb.Logf("the database has %d connections open 10 s after its Close", db.Stats().OpenConnections)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func testDSN(path string) string {
	return "file:" + path + "?_busy_timeout=10000&_journal_mode=WAL&_foreign_keys=1&_synchronous=NORMAL"
}

// migrated is a database file migrated once per test binary: a new test
// database is a copy of it, which Migrate then finds at the latest
// version. Migrating from nothing costs ~150 ms, and ~5 s under the race
// detector, for each of the package's eighty-odd databases.
var migrated struct {
	once sync.Once
	dir  string
	data []byte
	err  error
}

// copyMigrated writes a copy of the migrated database at path.
func copyMigrated(tb testing.TB, path string) {
	tb.Helper()
	migrated.once.Do(func() {
		if migrated.dir, migrated.err = os.MkdirTemp("", "engram-search-test-"); migrated.err != nil {
			return
		}
		src := filepath.Join(migrated.dir, "migrated.db")
		db, err := sql.Open(sqlitedriver.Name, testDSN(src))
		if err != nil {
			migrated.err = err
			return
		}
		if _, _, err = sqlite.Migrate(context.Background(), db); err == nil {
			_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		}
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			migrated.data, err = os.ReadFile(src)
		}
		migrated.err = err
	})
	if migrated.err != nil {
		tb.Fatalf("migrating the template database: %v", migrated.err)
	}
	if err := os.WriteFile(path, migrated.data, 0o600); err != nil {
		tb.Fatal(err)
	}
}

var baseTime = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// prepared holds the statements execPrepared parsed, per database. An
// unprepared INSERT into archival or messages compiles every trigger it
// fires, each time: about 0.6 ms, and thirty-odd times that under the race
// detector, where the transpiled SQLite's parser is slow.
var prepared sync.Map // preparedKey -> *sql.Stmt

type preparedKey struct {
	db    *sql.DB
	query string
}

// execPrepared runs query on db, parsed once per database when db is a
// *sql.DB (a transaction's statements are parsed each time).
func execPrepared(tb testing.TB, db execer, query string, args ...any) (sql.Result, error) {
	ctx := context.Background()
	d, ok := db.(*sql.DB)
	if !ok {
		return db.ExecContext(ctx, query, args...)
	}
	key := preparedKey{d, query}
	st, ok := prepared.Load(key)
	if !ok {
		s, err := d.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		if st, ok = prepared.LoadOrStore(key, s); ok {
			s.Close()
		} else {
			tb.Cleanup(func() { prepared.Delete(key); s.Close() })
		}
	}
	return st.(*sql.Stmt).ExecContext(ctx, args...)
}

func insertBlock(tb testing.TB, db execer, owner, label, rendered string) int64 {
	tb.Helper()
	res, err := db.ExecContext(context.Background(), `INSERT INTO blocks
		(owner, label, description, block_type, permission, schema_json, char_limit, rendered, created_at, updated_at)
		VALUES (?, ?, '', 'working', 'ReadWrite', '{}', 5000, ?, ?, ?)`,
		owner, label, rendered, baseTime.UnixNano(), baseTime.UnixNano())
	if err != nil {
		tb.Fatal(err)
	}
	id, _ := res.LastInsertId()
	return id
}

func shareBlock(tb testing.TB, db execer, blockID int64, agent string) {
	tb.Helper()
	if _, err := db.ExecContext(context.Background(), `INSERT INTO shares (block_id, agent, permission, created_at)
		VALUES (?, ?, 'ReadOnly', ?)`, blockID, agent, baseTime.UnixNano()); err != nil {
		tb.Fatal(err)
	}
}

type archivalRow struct {
	ID       int64 // 0: assigned
	Agent    string
	Content  string
	Tags     []string
	Metadata string
	Created  time.Time
}

func insertArchival(tb testing.TB, db execer, r archivalRow) int64 {
	tb.Helper()
	if r.Created.IsZero() {
		r.Created = baseTime
	}
	if r.Metadata == "" {
		r.Metadata = "{}"
	}
	tags, _ := json.Marshal(r.Tags)
	if r.Tags == nil {
		tags = []byte("[]")
	}
	var id any
	if r.ID != 0 {
		id = r.ID
	}
	res, err := execPrepared(tb, db, `INSERT INTO archival
		(id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		id, r.Agent, r.Content, r.Metadata, string(tags), strings.Join(r.Tags, " "),
		r.Created.UnixNano(), r.Created.UnixNano())
	if err != nil {
		tb.Fatal(err)
	}
	newID, _ := res.LastInsertId()
	for _, t := range r.Tags {
		if _, err := execPrepared(tb, db, `INSERT INTO archival_tags (archival_id, tag) VALUES (?, ?)`, newID, t); err != nil {
			tb.Fatal(err)
		}
	}
	return newID
}

func insertMessage(tb testing.TB, db execer, agent, role, content string, created time.Time) int64 {
	tb.Helper()
	if created.IsZero() {
		created = baseTime
	}
	res, err := execPrepared(tb, db, `INSERT INTO messages
		(agent, role, content, batch_id, seq, created_at)
		VALUES (?, ?, ?, 'b1', (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE agent = ?), ?)`,
		agent, role, content, agent, created.UnixNano())
	if err != nil {
		tb.Fatal(err)
	}
	id, _ := res.LastInsertId()
	return id
}

// indexAll embeds every row of every table with the index's embedder.
func indexAll(tb testing.TB, ctx context.Context, db *sql.DB, x *searchindex.Index) {
	tb.Helper()
	type q struct {
		t     search.ContentType
		query string
	}
	for _, s := range []q{
		{search.Blocks, `SELECT id, owner, label, description, rendered FROM blocks`},
		{search.Archival, `SELECT id, agent, '', '', content FROM archival`},
		{search.Messages, `SELECT id, agent, '', '', content FROM messages`},
	} {
		rows, err := db.QueryContext(ctx, s.query)
		if err != nil {
			tb.Fatal(err)
		}
		var items []searchindex.VectorItem
		for rows.Next() {
			var it searchindex.VectorItem
			var label, desc, text string
			if err := rows.Scan(&it.ID, &it.Owner, &label, &desc, &text); err != nil {
				tb.Fatal(err)
			}
			if s.t == search.Blocks {
				it.Text = search.BlockText(label, desc, text)
			} else {
				it.Text = text
			}
			items = append(items, it)
		}
		rows.Close()
		if err := x.PutVectors(ctx, db, s.t, items); err != nil {
			tb.Fatal(err)
		}
	}
}

// key names a result for set comparisons: "archival:3".
func key(r search.Result) string {
	return r.Type.String() + ":" + strconv.FormatInt(r.ID, 10)
}

func keys(rs []search.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = key(r)
	}
	return out
}

func migrate(ctx context.Context, db *sql.DB) error {
	_, _, err := sqlite.Migrate(ctx, db)
	return err
}

// newIndexWarm is NewIndex with the vector cache (if any) loaded, so a
// cache mode's searches run over it from the first one on.
func newIndexWarm(ctx context.Context, db *sql.DB, emb search.Embedder, opts *searchindex.IndexOptions) (*searchindex.Index, error) {
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, opts)
	if err != nil {
		return x, err
	}
	return x, x.WarmVectorCache(ctx)
}

// inTx runs fill in one transaction on db and commits it: a test's rows
// written at once, not one commit each.
func inTx(tb testing.TB, db *sql.DB, fill func(tx execer)) {
	tb.Helper()
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	fill(tx)
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// sameBits: the same results in the same order with the same scores, to
// the bit.
func sameBits(want, got []search.Result) error { return sameResults(want, got, 0) }

// sameResults: the same results in the same order, scores within rel of
// want's (0: to the bit; FTS5's log() and Go's can differ in the last bit
// where a search's legs are ranked in both).
func sameResults(want, got []search.Result, rel float64) error {
	if len(want) != len(got) {
		return fmt.Errorf("%d results, want %d", len(got), len(want))
	}
	same := func(w, g float64) bool {
		if rel == 0 {
			return math.Float64bits(w) == math.Float64bits(g)
		}
		return math.Abs(w-g) <= rel*math.Abs(w)
	}
	for i := range want {
		w, g := want[i], got[i]
		if key(w) != key(g) {
			return fmt.Errorf("result %d: %s, want %s", i, key(g), key(w))
		}
		if !same(w.Score, g.Score) || !same(w.Source.BM25, g.Source.BM25) {
			return fmt.Errorf("result %d (%s): score %.17g bm25 %.17g, want %.17g %.17g", i, key(w), g.Score, g.Source.BM25, w.Score, w.Source.BM25)
		}
	}
	return nil
}

// searchAnswer is what a search run in the background answered
// (searchLater): how many results, or why none.
type searchAnswer struct {
	n   int
	err error
}

// searchLater runs x's search of query for agent in a goroutine (a
// search left waiting, as for the cache's bound); its answer comes on
// the channel.
func searchLater(ctx context.Context, x *searchindex.Index, query, agent string, opts *search.Options) <-chan searchAnswer {
	done := make(chan searchAnswer, 1)
	go func() {
		got, err := x.Search(ctx, query, search.Scope{Agent: agent}, opts)
		done <- searchAnswer{len(got), err}
	}()
	return done
}
