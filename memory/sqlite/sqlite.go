package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/engram-go/engram/internal/groupcommit"
	"github.com/engram-go/engram/internal/sqlitedriver"
)

// Options configure a Backend. The zero value (or nil) means the defaults.
type Options struct {
	// BusyTimeout is how long a write waits for another process's lock
	// (default 10s).
	BusyTimeout time.Duration
}

// Backend is one SQLite database file (or ":memory:") opened for an engram
// store: a single writer connection taking BEGIN IMMEDIATE transactions and
// a small reader pool, in WAL mode, migrated to the latest schema.
type Backend struct {
	path string
	mem  bool // an in-memory database: ":memory:" or a URI naming one
	busy time.Duration
	wdb  *sql.DB // one connection, BEGIN IMMEDIATE transactions
	rdb  *sql.DB // readers (the same pool as wdb for ":memory:")

	// stmts holds the store's hot write statements, parsed once on the
	// writer connection (see Prepare).
	stmtsMu sync.RWMutex
	stmts   map[string]*sql.Stmt

	// Group commit (see Write).
	commits groupcommit.Committer

	// ckpt copies the WAL back to the file in the background (see
	// checkpoint.go); nil for ":memory:".
	ckpt *checkpointer

	// vconn is one connection that only reads PRAGMA data_version (see
	// DataVersion), opened on first use and kept: data_version is a
	// per-connection counter. vgen counts the connections used, so values
	// of two connections never compare equal. Never set for ":memory:".
	vmu   sync.Mutex
	vdb   *sql.DB
	vconn *sql.Conn
	vstmt driver.Stmt // on vconn's driver connection, used inside Raw only
	vgen  int64
}

// DataVersion returns SQLite's data_version as seen by a connection of its
// own that never writes: it changes whenever any connection, of this
// process (the writer included) or another, commits to the file, and
// stays the same otherwise. A caller that read v before some reads and
// gets v again knows those reads are still current, for the price of a
// pragma, cheaper than the block stamp's query. ok is false
// for ":memory:", whose one connection sees no commit as another's.
func (b *Backend) DataVersion(ctx context.Context) (v int64, ok bool, err error) {
	if b.mem {
		return 0, false, nil
	}
	b.vmu.Lock()
	defer b.vmu.Unlock()
	if b.vstmt == nil {
		if b.vdb == nil {
			if b.vdb, err = sql.Open(sqlitedriver.Name, b.dsn(false)); err != nil {
				return 0, false, fmt.Errorf("open %s: %w", b.path, err)
			}
			b.vdb.SetMaxOpenConns(1)
		}
		conn, err := b.vdb.Conn(ctx)
		if err != nil {
			return 0, false, fmt.Errorf("data_version of %s: %w", b.path, err)
		}
		// The pragma runs through the driver's own interfaces: database/sql's
		// statement and row machinery cost more than the pragma itself.
		var st driver.Stmt
		err = conn.Raw(func(dc any) error {
			p, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return fmt.Errorf("driver connection %T cannot prepare", dc)
			}
			st, err = p.PrepareContext(ctx, `PRAGMA data_version`)
			return err
		})
		if err != nil {
			conn.Close()
			return 0, false, fmt.Errorf("data_version of %s: %w", b.path, err)
		}
		b.vconn, b.vstmt = conn, st
		b.vgen++
	}
	err = b.vconn.Raw(func(any) error {
		v, err = readDataVersion(ctx, b.vstmt)
		if err != nil {
			// Closed here, on the driver connection it belongs to, which
			// database/sql may discard once this returns (ErrBadConn).
			err = errors.Join(err, b.vstmt.Close())
			b.vstmt = nil
		}
		return err
	})
	if err != nil {
		// Start over on a new connection next time: its counter is not
		// this one's.
		b.closeVersionConn()
		return 0, false, fmt.Errorf("data_version of %s: %w", b.path, err)
	}
	return b.vgen<<48 | v, true, nil
}

// readDataVersion runs the prepared PRAGMA data_version.
func readDataVersion(ctx context.Context, st driver.Stmt) (int64, error) {
	q, ok := st.(driver.StmtQueryContext)
	if !ok {
		return 0, fmt.Errorf("driver statement %T cannot query", st)
	}
	rows, err := q.QueryContext(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err != nil {
		return 0, err
	}
	n, ok := dest[0].(int64)
	if !ok {
		return 0, fmt.Errorf("data_version is %T", dest[0])
	}
	return n, nil
}

// closeVersionConn closes DataVersion's statement and connection; callers
// hold vmu.
func (b *Backend) closeVersionConn() error {
	if b.vconn == nil {
		return nil
	}
	var err error
	if stmt := b.vstmt; stmt != nil {
		err = b.vconn.Raw(func(any) error { return stmt.Close() })
	}
	err = errors.Join(err, b.vconn.Close())
	b.vconn, b.vstmt = nil, nil
	return err
}

// Prepare parses queries once for the writer connection, so write
// transactions run them through TxStmt without parsing them again (the
// driver parses every Exec otherwise: about a sixth of a block append).
// Call it outside any write transaction: the writer has one connection.
//
// The statements are parsed without holding the map's lock: parsing needs
// the writer's connection, which a write transaction may hold while it
// looks its statements up (TxStmt).
func (b *Backend) Prepare(ctx context.Context, queries ...string) error {
	for _, q := range queries {
		b.stmtsMu.RLock()
		have := b.stmts[q] != nil
		b.stmtsMu.RUnlock()
		if have {
			continue
		}
		st, err := b.wdb.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		b.stmtsMu.Lock()
		if b.stmts == nil {
			b.stmts = map[string]*sql.Stmt{}
		}
		if b.stmts[q] == nil {
			b.stmts[q] = st
			st = nil
		}
		b.stmtsMu.Unlock()
		if st != nil { // another caller prepared it meanwhile
			st.Close()
		}
	}
	return nil
}

// TxStmt returns the prepared form of query for tx (a Write transaction),
// or nil when query was not prepared.
func (b *Backend) TxStmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	b.stmtsMu.RLock()
	st := b.stmts[query]
	b.stmtsMu.RUnlock()
	if st == nil {
		return nil
	}
	return tx.StmtContext(ctx, st)
}

// readerConns is the size of the reader pool.
const readerConns = 4

// Open opens (creating if needed) the SQLite database at path, sets WAL
// mode and applies migrations.SQLite (see Migrate).
func Open(ctx context.Context, path string, opts *Options) (*Backend, error) {
	return open(ctx, path, opts, true)
}

// open is Open; background says whether the checkpointer runs (tests
// leave it out to see what the writer alone does).
func open(ctx context.Context, path string, opts *Options, background bool) (*Backend, error) {
	b := &Backend{path: path, mem: inMemory(path), busy: 10 * time.Second}
	if opts != nil && opts.BusyTimeout > 0 {
		b.busy = opts.BusyTimeout
	}
	var err error
	if b.mem {
		// One connection shared by readers and the writer: each new
		// connection to ":memory:" (or "file::memory:", mode=memory, the
		// empty "file:") would be a different database, and none of them
		// takes WAL mode.
		b.wdb, err = sql.Open(sqlitedriver.Name, b.dsn(false))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		b.wdb.SetMaxOpenConns(1)
		b.rdb = b.wdb
	} else {
		if err := createPrivate(path); err != nil {
			return nil, err
		}
		if err := b.enableWAL(ctx); err != nil {
			return nil, err
		}
		// The writer checkpoints only as a backstop; the checkpointer
		// does it in the background (see checkpoint.go).
		autoCheckpoint := fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", writerAutoCheckpoint)
		if b.wdb, err = openWithPragmas(b.dsn(true), autoCheckpoint); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		b.wdb.SetMaxOpenConns(1)
		if b.rdb, err = sql.Open(sqlitedriver.Name, b.dsn(false)); err != nil {
			b.wdb.Close()
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		// Every reader connection is kept: a new one opens the file with
		// its pragmas and prepares again the statements used on it.
		b.rdb.SetMaxOpenConns(readerConns)
		b.rdb.SetMaxIdleConns(readerConns)
		if background {
			b.ckpt = newCheckpointer(b.rdb, b.wdb, FileName(path))
		}
	}
	b.commits = groupcommit.Committer{
		// The writer connection waits only ~1 ms inside SQLite; the
		// committer polls with short jittered sleeps (fair between
		// processes) and stops a lone write's wait when its caller gives
		// up. The transaction is never bound to a caller's context.
		Begin:   func(context.Context) (*sql.Tx, error) { return b.wdb.BeginTx(context.Background(), nil) },
		Busy:    IsBusy,
		Timeout: b.busy,
	}
	// Migrations take their own write lock; they run on the reader pool,
	// whose busy timeout is the long one.
	if _, _, err := Migrate(ctx, b.rdb); err != nil {
		b.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return b, nil
}

// createPrivate creates a new database file 0600 before SQLite does: the
// driver would create it 0644 (less the umask), readable by every local
// user, and it holds every agent's memory. SQLite gives the -wal and -shm
// files it creates the database file's mode, so they are private too. A
// link to a file not made yet gets its target made so. An existing file
// keeps its mode (the operator's choice); a name that exists
// as something else is left to SQLite. A "file:" URI's file is made so too.
func createPrivate(path string) error {
	if path = FileName(path); path == "" {
		return nil // an in-memory database, or a URI SQLite resolves
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
		// A symbolic link to a file not made yet (O_EXCL refuses any
		// link): create its target, 0600, as SQLite would (0644).
		// Without O_EXCL a file made meanwhile is opened, not truncated.
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return f.Close()
}

// Name returns "sqlite".
func (b *Backend) Name() string { return "sqlite" }

// Path returns the database file (or ":memory:").
func (b *Backend) Path() string { return b.path }

// Write runs fn in an IMMEDIATE transaction on the writer connection and
// returns once that transaction committed (or failed). Writes that queue
// behind a running transaction commit together (group commit, see
// groupcommit.Committer.Write): each in its own SAVEPOINT, one commit,
// every write acknowledged only after it. fn runs at most once; a caller
// whose context ends before its fn started gets the context's error and
// nothing is written.
func (b *Backend) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	err := b.commits.Write(ctx, fn)
	if err == nil && b.ckpt != nil {
		b.ckpt.committed()
	}
	return err
}

// Queued reports how many writes wait behind the running group (for tests
// and metrics).
func (b *Backend) Queued() int { return b.commits.Queued() }

// DB returns the reader pool.
func (b *Backend) DB() *sql.DB { return b.rdb }

// ReadTx begins a read-only transaction on the reader pool. A WAL reader
// sees one snapshot from its first read to its end, so no stronger
// isolation is asked for.
func (b *Backend) ReadTx(ctx context.Context) (*sql.Tx, error) {
	return b.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
}

// PadsRows returns true: SQLite rewrites every page of a row whose size
// changes but overwrites a row of unchanged size in place, writing only
// the pages whose bytes differ, so block rows keep slack in blocks.pad
// (migrations/sqlite/0011_block_row_pad.sql).
func (b *Backend) PadsRows() bool { return true }

// JSONInt64s returns SQLite's json_each over the bound array.
func (b *Backend) JSONInt64s(int) string { return `SELECT value FROM json_each(?)` }

// Close closes both pools.
func (b *Backend) Close() error {
	var err error
	if b.ckpt != nil {
		b.ckpt.close()
	}
	b.stmtsMu.Lock()
	for _, st := range b.stmts {
		err = errors.Join(err, st.Close())
	}
	b.stmts = nil
	b.stmtsMu.Unlock()
	b.vmu.Lock()
	err = errors.Join(err, b.closeVersionConn())
	if b.vdb != nil {
		err = errors.Join(err, b.vdb.Close())
	}
	b.vdb = nil
	b.vmu.Unlock()
	if b.rdb != nil && b.rdb != b.wdb {
		err = errors.Join(err, b.rdb.Close())
	}
	if b.wdb != nil {
		err = errors.Join(err, b.wdb.Close())
	}
	return err
}

// IsConflict reports a UNIQUE or PRIMARY KEY constraint violation.
func (b *Backend) IsConflict(err error) bool { return sqlitedriver.IsConflict(err) }

// IsBusy reports whether err is SQLite's "database is locked".
func IsBusy(err error) bool { return sqlitedriver.IsBusy(err) }

// Driver is the database/sql driver name the backend opens, which the
// build chose (see internal/sqlitedriver): "sqlite" for modernc.org/sqlite,
// "sqlite3" for mattn/go-sqlite3 under the engram_cgo build tag.
const Driver = sqlitedriver.Name

// DriverModule is the module of that driver.
const DriverModule = sqlitedriver.Module

func (b *Backend) dsn(immediate bool) string {
	q := url.Values{}
	busy := b.busy.Milliseconds()
	if immediate {
		// The writer polls in Write instead (see there): SQLite's own
		// handler would sleep a whole millisecond at its first try.
		busy = 0
	}
	q.Set("_busy_timeout", fmt.Sprint(busy))
	q.Set("_foreign_keys", "1")
	if !b.mem {
		q.Set("_journal_mode", "WAL")
		// NORMAL in WAL mode survives process crashes (kill -9); FULL would
		// also survive power loss at a large cost per commit.
		q.Set("_synchronous", "NORMAL")
	}
	if immediate {
		q.Set("_txlock", "immediate")
	}
	return b.path + b.querySep() + q.Encode()
}

// querySep is what joins the driver's parameters to the path: "&" after a
// "file:" URI's own query ("file:x.db?mode=rwc"), else "?".
func (b *Backend) querySep() string {
	if strings.HasPrefix(b.path, "file:") && strings.Contains(b.path, "?") {
		return "&"
	}
	return "?"
}

// inMemory reports whether path names an in-memory (or temporary)
// database: ":memory:", "file::memory:", a "file:" URI with mode=memory,
// or the empty "file:" — what FileName has no file for, except a URI
// naming another host (which SQLite refuses).
func inMemory(path string) bool {
	if path == ":memory:" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "file:")
	if !ok || FileName(path) != "" {
		return false
	}
	rest, _, _ = strings.Cut(rest, "#")
	rest, _, _ = strings.Cut(rest, "?")
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		host, _, _ := strings.Cut(after, "/")
		return host == "" || host == "localhost" // another host: a path elsewhere
	}
	return true
}

// FileName returns the file SQLite opens for path: path itself, or for a
// "file:" URI ("file:/a/b.db?mode=rwc", "file:///a/b.db", "file:b.db")
// its decoded path, or "" for an in-memory database (":memory:",
// "file::memory:", mode=memory) and a URI naming another host.
func FileName(path string) string {
	if path == ":memory:" {
		return ""
	}
	rest, ok := strings.CutPrefix(path, "file:")
	if !ok {
		return path
	}
	rest, _, _ = strings.Cut(rest, "#")
	rest, query, _ := strings.Cut(rest, "?")
	if q, err := url.ParseQuery(query); err == nil && q.Get("mode") == "memory" {
		return ""
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		host, p, found := strings.Cut(after, "/")
		if !found || host != "" && host != "localhost" {
			return ""
		}
		rest = "/" + p
	}
	p, err := url.PathUnescape(rest)
	if err != nil || p == "" || p == ":memory:" {
		return ""
	}
	return p
}

// enableWAL switches a file to WAL once. The switch needs an exclusive lock
// SQLite does not wait for, so concurrent openers retry briefly; any other
// failure (a file that is not a database, a directory, no permission) is
// reported at once.
func (b *Backend) enableWAL(ctx context.Context) error {
	db, err := sql.Open(sqlitedriver.Name, b.path+b.querySep()+"_busy_timeout="+fmt.Sprint(b.busy.Milliseconds()))
	if err != nil {
		return fmt.Errorf("open %s: %w", b.path, err)
	}
	defer db.Close()
	deadline := time.Now().Add(b.busy)
	for {
		var mode string
		err = db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil && strings.EqualFold(mode, "wal") {
			return nil
		}
		if err != nil && !IsBusy(err) {
			return fmt.Errorf("open %s: %w", b.path, err)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			if err == nil {
				return fmt.Errorf("set WAL mode on %s: SQLite keeps journal mode %q (engram needs WAL: a VFS without shared memory, or a file another program holds in another mode?)", b.path, mode)
			}
			return fmt.Errorf("set WAL mode on %s: %w (mode %q)", b.path, err, mode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
