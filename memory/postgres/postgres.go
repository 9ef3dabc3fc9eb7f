package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	engdriver "github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/redact"
	"github.com/engram-go/engram/migrations"
)

// notifyChannel carries the ids of changed blocks (see
// migrations/postgres/0001_core.sql).
const notifyChannel = "engram_blocks"

// Options configure a Backend. The zero value (or nil) means the defaults.
type Options struct {
	// LockTimeout is how long a write waits for each lock it takes
	// (default 10s): the advisory locks of the blocks and agents it
	// writes, and the rows other writers hold.
	LockTimeout time.Duration
	// MaxConns caps the pool (default 8).
	MaxConns int
	// Logger receives connection-level logs (notification reconnects); nil
	// discards them.
	Logger *slog.Logger

	// tracer sees every statement the pool's connections send (tests
	// count round trips with it).
	tracer pgx.QueryTracer
}

// Backend is an engram store in a PostgreSQL database: a database/sql pool
// over pgx whose statements may use "?" placeholders (rewritten to $n),
// write transactions that run in parallel, each locking the blocks and
// agents it writes (WriteLocked, see locks.go), migrations embedded in
// this package, and block-change notifications over LISTEN/NOTIFY.
type Backend struct {
	cfg      *pgx.ConnConfig
	db       *sql.DB
	timeout  time.Duration
	log      *slog.Logger
	target   string   // redacted
	deferred sync.Map // *sql.Tx of WriteBlocks -> *deferred
	notify   *notifier
	grown    *growthAnalyzer
	// maxConns is the pool's size: how many idle connections a restart
	// of the server may have left dead (see Backend.write).
	maxConns int
}

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value connection string) and applies the migrations. A database
// whose schema is newer than this build is refused.
func Open(ctx context.Context, dsn string, opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = 10 * time.Second
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	dsn, err := checkURL(dsn)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's message can quote the DSN, or a piece of a password (a
		// bad escape), so it is not shown.
		hint := "percent-encode special characters in a URL's password: % as %25, @ as %40, / as %2F"
		if !strings.Contains(dsn, "://") {
			hint = `single-quote a keyword value holding spaces or quotes, escaping ' and \ with \: password='it\'s a secret'`
		}
		return nil, fmt.Errorf("%w: %s (%s)", ErrInvalidDSN, Redact(dsn), hint)
	}
	if strings.Contains(cfg.Database, "://") || strings.Contains(cfg.Database, "=") {
		// libpq expands such a dbname ("dbname=postgres://u:pw@h/db");
		// pgx takes it for a name, which its errors (and the server's)
		// then quote, password and all.
		return nil, fmt.Errorf("%w: %s (dbname holds a connection string: give that string itself as the store)", ErrInvalidDSN, Redact(dsn))
	}
	if o.tracer != nil {
		cfg.Tracer = o.tracer
	}
	b := &Backend{cfg: cfg, timeout: o.LockTimeout, log: o.Logger, target: Redact(dsn), maxConns: o.MaxConns}
	b.db = sql.OpenDB(rebindConnector{Connector: stdlib.GetConnector(*cfg), unprepared: !namedStatements(cfg)})
	b.db.SetMaxOpenConns(o.MaxConns)
	b.db.SetMaxIdleConns(o.MaxConns)
	if err := b.db.PingContext(ctx); err != nil {
		b.db.Close()
		return nil, fmt.Errorf("connect to %s: %w", b.target, err)
	}
	if err := b.migrate(ctx); err != nil {
		b.db.Close()
		return nil, fmt.Errorf("migrate %s: %w", b.target, err)
	}
	b.notify = startNotifier(b.db, b.log, b.target)
	b.grown = startGrowthAnalyzer(cfg, b.log)
	return b, nil
}

// Name returns "postgres".
func (b *Backend) Name() string { return "postgres" }

// DB returns the pool. Statements may use "?" placeholders.
func (b *Backend) DB() *sql.DB { return b.db }

// ReadTx begins a read-only REPEATABLE READ transaction: the default,
// READ COMMITTED, lets each statement see a newer commit, so a block's
// row, snapshot and updates read one after another could disagree.
func (b *Backend) ReadTx(ctx context.Context) (*sql.Tx, error) {
	return b.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
}

// PadsRows returns false: every UPDATE writes a new row version, so slack
// would save nothing (the schema has no pad column).
func (b *Backend) PadsRows() bool { return false }

// JSONInt64s returns the bound array's elements (jsonElements, worded
// for n of them), cast to bigint.
func (b *Backend) JSONInt64s(n int) string {
	return `SELECT j.value::bigint AS value FROM ` + jsonElements(n) + ` j(value)`
}

// Close sends the notifications still to go (WriteBlocks) and closes the
// pool.
func (b *Backend) Close() error {
	b.notify.close()
	b.grown.close()
	return b.db.Close()
}

// IsConflict reports a unique_violation (SQLSTATE 23505).
func (b *Backend) IsConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// Write runs fn in a write transaction that takes no lock of its own but
// the store's, shared: on PostgreSQL writers run in parallel, and what
// must not be written by two of them at once is locked by name
// (WriteLocked, WriteBlocks, Lock). fn runs at most once; once it runs
// the transaction completes whatever ctx does.
func (b *Backend) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return b.WriteLocked(ctx, nil, fn)
}

// WriteLocked runs fn in a write transaction holding locks (advisory,
// transaction-scoped: released at commit, so connection poolers in
// transaction mode keep working) and the store's lock shared (exclusive
// when locks holds driver.StoreLock), taken in key order in the
// transaction's first statement, which also sets its lock_timeout
// (Options.LockTimeout): a write to one block waits for that block's
// other writers only. Waiting for the locks honours ctx and the timeout,
// and a write that gives up there writes nothing; once fn runs the
// transaction completes whatever ctx does, and fn runs at most once.
// PostgreSQL itself commits concurrent transactions together (one WAL
// flush for those that arrive together), so writes are not grouped here.
func (b *Backend) WriteLocked(ctx context.Context, locks []engdriver.WriteLock, fn func(tx *sql.Tx) error) error {
	return b.write(ctx, locks, false, fn)
}

// WriteBlocks is WriteLocked for a write to the blocks it locks: their
// changes are notified (LISTEN/NOTIFY, channel engram_blocks) after the
// commit, together with those of the blocks it locks later (Lock), and no
// other block change of the transaction is. A transaction that notifies
// takes a lock of the whole cluster at its commit and holds it through
// the commit's WAL flush, so writers that notify in their own transaction
// commit one at a time; these do not (migration 0023). A notification
// goes out just after the commit, in a transaction of its own (with
// synchronous_commit off: it flushes nothing), shortly after the writer
// is answered; one of a process that dies in between is lost, and
// another process's cached copy of that block stays as it was until the
// block's next change (or until that process's notifications are
// interrupted, which re-checks every cached block).
func (b *Backend) WriteBlocks(ctx context.Context, locks []engdriver.WriteLock, fn func(tx *sql.Tx) error) error {
	return b.write(ctx, locks, true, fn)
}

// deferred are the blocks a WriteBlocks transaction notifies after its
// commit.
type deferred struct {
	mu  sync.Mutex
	ids []int64
}

func (d *deferred) add(locks []engdriver.WriteLock) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range locks {
		if l.Kind() == engdriver.LockBlock {
			d.ids = append(d.ids, l.Block())
		}
	}
}

func (b *Backend) write(ctx context.Context, locks []engdriver.WriteLock, notifyAfter bool, fn func(tx *sql.Tx) error) error {
	err := b.writeOnce(ctx, locks, notifyAfter, fn)
	for range b.maxConns {
		if !errors.As(err, new(notStarted)) || ctx.Err() != nil {
			break
		}
		// A pooled connection the server had closed (a restart, a
		// terminated backend, a proxy's cut) since its last use, less than
		// the second after which the pool checks it: its BEGIN failed, so
		// nothing ran; again on another connection (the pool drops the
		// closed one, and every idle one may be as dead).
		err = b.writeOnce(ctx, locks, notifyAfter, fn)
	}
	return err
}

// notStarted is a write transaction's error on a connection found closed
// at its BEGIN: nothing of the transaction ran, so it may run again.
type notStarted struct{ err error }

func (e notStarted) Error() string { return e.err.Error() }
func (e notStarted) Unwrap() error { return e.err }

func (b *Backend) writeOnce(ctx context.Context, locks []engdriver.WriteLock, notifyAfter bool, fn func(tx *sql.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The BEGIN goes with the lock statement below (lazyBegin).
	tx, err := b.db.BeginTx(context.WithValue(context.WithoutCancel(ctx), lazyBegin{}, true), nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// The store's lock, shared (exclusive when asked for), comes first.
	keys := lockKeys(append(locks, engdriver.StoreLock()))
	exclusive := slices.ContainsFunc(locks, func(l engdriver.WriteLock) bool { return l.Kind() == engdriver.LockStore })
	args := []any{fmt.Sprintf("%dms", b.timeout.Milliseconds())}
	q := "SELECT set_config('lock_timeout', ?, true), "
	var d *deferred
	if notifyAfter {
		q += "set_config('engram.notify', 'after', true), "
		d = &deferred{}
		d.add(locks)
		b.deferred.Store(tx, d)
		defer b.deferred.Delete(tx)
	}
	for _, k := range keys {
		args = append(args, k)
	}
	q += lockCalls(keys, exclusive)
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("take the write locks: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback() // fn panicked
		}
	}()
	err = fn(tx)
	done = true
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	b.grown.noteWrite()
	if d != nil {
		d.mu.Lock()
		b.notify.add(d.ids)
		d.mu.Unlock()
	}
	return nil
}

// Lock takes more locks in a transaction of WriteLocked or WriteBlocks:
// only locks that come after every lock it holds (see driver.WriteLock),
// which it keeps to its end. In a WriteBlocks transaction the blocks
// locked are notified after its commit.
func (b *Backend) Lock(ctx context.Context, tx *sql.Tx, locks ...engdriver.WriteLock) error {
	if err := (SearchDialect{}).LockWrites(ctx, tx, locks); err != nil {
		return err
	}
	if d, ok := b.deferred.Load(tx); ok {
		d.(*deferred).add(locks)
	}
	return nil
}

// NotifyAfter adds blocks to what a WriteBlocks transaction notifies after
// its commit, without locking them: blocks it created (no other
// transaction can know their ids before the commit, so none can wait for
// them). Outside WriteBlocks it does nothing.
func (b *Backend) NotifyAfter(tx *sql.Tx, ids ...int64) {
	if d, ok := b.deferred.Load(tx); ok {
		d := d.(*deferred)
		d.mu.Lock()
		d.ids = append(d.ids, ids...)
		d.mu.Unlock()
	}
}

// migrate applies migrations.Postgres in order, in one transaction
// holding the store's lock exclusively (no write of another process runs
// beside a change of the schema), recording the version in
// engram_schema. A database already at this build's version is only
// read. A database at a newer version than this build knows is refused.
func (b *Backend) migrate(ctx context.Context) error {
	all, err := migrations.Postgres()
	if err != nil {
		return err
	}
	var have int
	if err := b.db.QueryRowContext(ctx, `SELECT version FROM engram_schema`).Scan(&have); err == nil && have == len(all) {
		return nil
	}
	return b.WriteLocked(ctx, []engdriver.WriteLock{engdriver.StoreLock()}, func(tx *sql.Tx) error {
		// Under the store's lock: IF NOT EXISTS does not make concurrent
		// creators safe (the loser gets 23505, 42P07 or 42710), and two
		// processes opening a fresh database at once is ordinary.
		if _, err := tx.ExecContext(ctx, migrations.PostgresVersionTable); err != nil {
			return err
		}
		var v int
		err := tx.QueryRowContext(ctx, `SELECT version FROM engram_schema`).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := tx.ExecContext(ctx, `INSERT INTO engram_schema (version) VALUES (0)`); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if v > len(all) {
			return fmt.Errorf("%w: database schema version %d, this build knows %d", ErrNewerSchema, v, len(all))
		}
		for _, m := range all[v:] {
			// Whole files go through the simple protocol (several
			// statements, dollar-quoted function bodies).
			if _, err := tx.ExecContext(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
				return fmt.Errorf("apply %s: %w", m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE engram_schema SET version = ?`, m.Version); err != nil {
				return err
			}
		}
		return nil
	})
}

// SchemaVersion returns the database's migration version and the latest
// this build knows.
func (b *Backend) SchemaVersion(ctx context.Context) (have, latest int, err error) {
	all, err := migrations.Postgres()
	if err != nil {
		return 0, 0, err
	}
	err = b.db.QueryRowContext(ctx, `SELECT version FROM engram_schema`).Scan(&have)
	return have, len(all), err
}

// WatchBlocks listens on the engram_blocks channel until ctx ends: each
// notification's block id goes to changed; live reports whether the
// listening connection is up (false on loss, true once LISTEN is in place
// again and a notification sent through the pool has reached it, so the
// caller re-checks what it cached meanwhile). Notifications that cannot
// reach it (a pooler in transaction mode) leave it reporting false.
func (b *Backend) WatchBlocks(ctx context.Context, changed func(id int64), live func(bool)) {
	backoff := 50 * time.Millisecond
	warned := false
	for ctx.Err() == nil {
		err := b.listen(ctx, changed, live, &backoff)
		live(false)
		if ctx.Err() != nil {
			return
		}
		wait := backoff + time.Duration(rand.Int64N(int64(backoff)))
		if errors.Is(err, errNotificationsUnreachable) {
			// Cached blocks are checked by query meanwhile; said once
			// (each retry would say it again).
			if !warned {
				b.log.Warn("engram: block notifications do not reach this process; cached blocks are checked at each access", "target", b.target, "err", err)
				warned = true
			}
			wait = notifyUnreachableRetry + time.Duration(rand.Int64N(int64(notifyUnreachableRetry/4)))
		} else {
			b.log.Warn("engram: block notifications lost; reconnecting", "target", b.target, "err", err)
			backoff = min(2*backoff, 5*time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// listen LISTENs on its own connection, first checking that a
// notification sent through the pool reaches it (a pooler in transaction
// mode lets a LISTEN succeed on a server connection it then hands to
// others), reports the channel live and passes each block id notified to
// changed.
//
// The check listens on a channel of its own, used once: through such a
// pooler the LISTEN stays on the server connection it ran on, and one on
// engram_blocks would have every block change of every process sent to
// connections other clients use (or to one PgBouncer before 1.21 is
// cancelling, which makes it exit). Only once the probe has come back
// does the connection LISTEN on engram_blocks.
func (b *Backend) listen(ctx context.Context, changed func(int64), live func(bool), backoff *time.Duration) error {
	conn, err := pgx.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	probe, err := newProbe()
	if err != nil {
		return err
	}
	// The statements run to their end when ctx ends meanwhile (Close): a
	// connection closed in the middle of a statement leaves the server to
	// notice later, and a pooler to cancel the statement, which PgBouncer
	// before 1.21 can meet by exiting.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenStatementWait)
	defer cancel()
	if _, err := conn.Exec(sctx, "LISTEN "+probe); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // closing: no probe to wait for
	}
	if _, err := b.db.ExecContext(sctx, `SELECT pg_notify(?, '')`, probe); err != nil {
		return fmt.Errorf("probe notifications: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	pctx, cancelProbe := context.WithTimeout(ctx, notifyProbeWait)
	defer cancelProbe()
	for {
		n, err := conn.WaitForNotification(pctx)
		if err != nil {
			if ctx.Err() == nil && pctx.Err() != nil {
				return errNotificationsUnreachable
			}
			return err
		}
		if n.Channel == probe {
			break
		}
	}
	cancelProbe()
	for _, q := range []string{"UNLISTEN " + probe, "LISTEN " + notifyChannel} {
		if _, err := conn.Exec(sctx, q); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	live(true)
	*backoff = 50 * time.Millisecond
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
			changed(id)
		}
	}
}

// checkURL prepares a postgres:// URL for pgx, which parses it as libpq
// does: the scheme is lowered (schemes are case-insensitive, and the store
// takes "POSTGRES://" for PostgreSQL, but pgx only knows lower case), and
// a URL with an '@' outside its userinfo (which, as in libpq, ends at the
// first '@' before any '/') in its host or path is refused as
// ErrInvalidDSN. Such an '@' is the end of a password holding an
// unescaped '/':
// "postgres://ada:1/s3cret@h/db" is host "ada", port 1 and database
// "s3cret@h/db" to pgx, whose connect error then quotes the password's
// pieces (and a DNS lookup or the server receives them). An '@' in a query
// value ("?user=ada@srv") stays allowed. A keyword DSN is left to pgx.
func checkURL(dsn string) (string, error) {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return dsn, nil
	}
	switch lower := strings.ToLower(scheme); lower {
	case "postgres", "postgresql":
		dsn = lower + "://" + rest
	default:
		return dsn, nil
	}
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		rest = rest[i+1:] // past the userinfo
	}
	// Only the host and path: a query may hold both '/' and '@' for good
	// reasons ("?host=/tmp&user=ada@srv").
	if hostPath, _, _ := strings.Cut(rest, "?"); strings.Contains(hostPath, "@") {
		return "", fmt.Errorf("%w: %s: an '@' outside the user:password part (percent-encode special characters in a URL's password: %% as %%25, @ as %%40, / as %%2F, ? as %%3F)",
			ErrInvalidDSN, Redact(dsn))
	}
	return dsn, nil
}

// Redact returns target with any password (and any other value that could
// be a credential) masked, for messages and logs; it is redact.Target, the
// one redaction every engram message uses.
func Redact(target string) string {
	return redact.Target(target)
}

// ErrInvalidDSN is returned by Open for a connection string pgx cannot
// parse; the message shows it redacted.
var ErrInvalidDSN = errors.New("postgres: invalid connection string")

// ErrNewerSchema is returned by Open for a database migrated by a newer
// engram.
var ErrNewerSchema = errors.New("postgres: database schema is newer than this build")

// rebindConnector hands out connections whose statements may use "?"
// placeholders: the store's statements are written once for SQLite and
// PostgreSQL. With unprepared, its connections prepare no named
// statement on the server (unpreparedStmt; see pooler.go).
type rebindConnector struct {
	driver.Connector
	unprepared bool
}

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rebindConn{Conn: conn.(*stdlib.Conn), unprepared: c.unprepared}, nil
}

type rebindConn struct {
	*stdlib.Conn
	// lazy: a write transaction began (lazyBegin) whose BEGIN goes with
	// its first statement.
	lazy       bool
	unprepared bool
}

// beginWrite begins a write transaction at READ COMMITTED, whatever the
// server's default_transaction_isolation: each statement then sees what
// committed before it. The writers are made for it (a write that waited
// for a lock reads what the holder committed), and so are stored text
// partitions (docs/design.md): a save's check must see a delete that
// committed while the save began, and a delete's trigger a part saved
// while it waited for the part's lock.
const beginWrite = "begin isolation level read committed"

// lazyBegin marks the context of a write transaction's BeginTx whose first
// statement is an Exec run at once (Backend.write's locks): the BEGIN is
// sent with it, pipelined, instead of on its own, which saves every write
// a round trip.
type lazyBegin struct{}

func (c *rebindConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if ctx.Value(lazyBegin{}) == nil || opts.ReadOnly || sql.IsolationLevel(opts.Isolation) != sql.LevelDefault {
		return c.Conn.BeginTx(ctx, opts)
	}
	if c.Conn.Conn().IsClosed() {
		return nil, driver.ErrBadConn
	}
	c.lazy = true
	return lazyTx{c}, nil
}

// begin sends a BEGIN still to go on its own (a first statement that is
// not an Exec).
func (c *rebindConn) begin(ctx context.Context) error {
	if !c.lazy {
		return nil
	}
	c.lazy = false
	_, err := c.Conn.Conn().Exec(ctx, beginWrite)
	return err
}

// lazyTx is the driver's transaction of a lazyBegin write.
type lazyTx struct{ c *rebindConn }

func (t lazyTx) Commit() error {
	if t.c.lazy {
		t.c.lazy = false // nothing ran
		return nil
	}
	tag, err := t.c.Conn.Conn().Exec(context.Background(), "commit")
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

func (t lazyTx) Rollback() error {
	if t.c.lazy {
		t.c.lazy = false
		return nil
	}
	_, err := t.c.Conn.Conn().Exec(context.Background(), "rollback")
	return err
}

func (c *rebindConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext sends a BEGIN still to go first: the statement's
// executions bypass ExecContext. On a connection that keeps no named
// statements (unprepared) nothing is sent: each execution sends the text
// through ExecContext or QueryContext.
func (c *rebindConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if c.unprepared {
		return &unpreparedStmt{c: c, query: query}, nil
	}
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	st, err := c.Conn.PrepareContext(ctx, rebind(query))
	if err != nil {
		return nil, withPoolerHint(err)
	}
	if s, ok := st.(*stdlib.Stmt); ok {
		return hintedStmt{s}, nil
	}
	return st, nil // (another driver's: its executions' errors as they are)
}

func (c *rebindConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if !c.lazy {
		res, err := c.Conn.ExecContext(ctx, rebind(query), args)
		return res, withPoolerHint(err)
	}
	// BEGIN and the statement in one round trip.
	c.lazy = false
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	batch := &pgx.Batch{}
	batch.Queue(beginWrite)
	batch.Queue(rebind(query), vals...)
	res := c.Conn.Conn().SendBatch(ctx, batch)
	_, err := res.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = res.Exec()
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil && c.Conn.Conn().IsClosed() {
		// The connection died at the BEGIN or the statement with it (the
		// write's locks): no COMMIT was sent, so nothing of the
		// transaction took.
		err = notStarted{err}
	}
	if err != nil {
		return nil, withPoolerHint(err)
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

func (c *rebindConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	rows, err := c.Conn.QueryContext(ctx, rebind(query), args)
	return rows, withPoolerHint(err)
}

var rebound sync.Map // query → rewritten query

// rebind rewrites "?" placeholders to $1, $2, … outside quoted strings,
// identifiers, comments and dollar-quoted bodies.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	if v, ok := rebound.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		switch ch := q[i]; ch {
		case '\'', '"':
			j := i + 1
			for j < len(q) && q[j] != ch {
				j++
			}
			b.WriteString(q[i:min(j+1, len(q))])
			i = j
		case '$':
			// A dollar-quote tag ($$ or $tag$) opens a body that runs to the
			// same tag.
			j := i + 1
			for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z') {
				j++
			}
			if j < len(q) && q[j] == '$' {
				tag := q[i : j+1]
				end := strings.Index(q[j+1:], tag)
				if end >= 0 {
					stop := j + 1 + end + len(tag)
					b.WriteString(q[i:stop])
					i = stop - 1
					continue
				}
			}
			b.WriteByte(ch)
		case '-':
			if i+1 < len(q) && q[i+1] == '-' {
				j := strings.IndexByte(q[i:], '\n')
				if j < 0 {
					j = len(q) - i
				}
				b.WriteString(q[i : i+j])
				i += j - 1
				continue
			}
			b.WriteByte(ch)
		case '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
		default:
			b.WriteByte(ch)
		}
	}
	out := b.String()
	rebound.Store(q, out)
	return out
}
