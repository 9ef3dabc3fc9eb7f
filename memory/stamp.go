package memory

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/engram-go/engram/driver"
)

// BlocksStamp is a cheap fingerprint of the blocks an agent sees: its own
// blocks and the blocks shared with it. Two stamps read for one agent are
// equal only if Agent.Blocks and Agent.SharedBlocks would return the same
// blocks with the same metadata, permissions and rendered content in
// between, as this Store lists them (with Options.WriteBack its unflushed
// edits count: the listings show them, see Local). Any persisted change by any Store on the
// same database, in this process or another, changes it: a content edit, a
// metadata change (pin, type, schema, permission), creating or deleting a
// block, sharing, re-sharing with another permission, and unsharing.
//
// Stamps are only meant to be compared for equality; their fields are not
// ordered and mean nothing on their own. Store.BlocksChanged tells when a
// stamp may have moved, so a consumer need not read it on a timer (except
// for what no signal carries: see BlocksChanged). A consumer that caches listings
// must read the stamp before listing, so that a change racing with the
// listing makes the next stamp differ from the stored one.
type BlocksStamp struct {
	// Gen counts structural changes that concern the agent: blocks created
	// or deleted, shares granted, changed or revoked.
	Gen int64
	// Blocks is the number of blocks the agent sees (own and shared).
	Blocks int64
	// Seq is the sum of the update sequence, metadata version and epoch of
	// those blocks. With the set of blocks fixed (same Gen), it grows with
	// every persisted content or metadata change.
	Seq int64
	// Local counts this Store's write-back edits (Options.WriteBack), which
	// its listings show before they are flushed; 0 in write-through mode.
	Local int64
}

// stampQuery reads a BlocksStamp in one statement (so from one consistent
// snapshot): the agent's generation counter, a primary-key read of table
// meta, and the sums over its own blocks (index on owner) and the blocks
// shared with it (index shares_agent, then blocks by id).
const stampQuery = `SELECT
	COALESCE((SELECT CAST(value AS BIGINT) FROM meta WHERE key = ?), 0),
	count(*), COALESCE(sum(v), 0)
FROM (
	SELECT last_seq + meta_ver + epoch AS v FROM blocks WHERE owner = ?
	UNION ALL
	SELECT b.last_seq + b.meta_ver + b.epoch FROM shares s JOIN blocks b ON b.id = s.block_id WHERE s.agent = ?
) AS seen`

// genKeyPrefix prefixes an agent's generation counter in table meta.
const genKeyPrefix = "blocks_gen:"

func genKey(agent string) string { return genKeyPrefix + agent }

// blocksStamp implements [Agent.BlocksStamp]: stampQuery, skipped on
// SQLite while PRAGMA data_version says nothing was committed to the file
// since the agent's last stamp.
func (c *Store) blocksStamp(ctx context.Context, agent string) (BlocksStamp, error) {
	if err := c.checkOpen(ctx); err != nil {
		return BlocksStamp{}, err
	}
	if strings.TrimSpace(agent) == "" {
		return BlocksStamp{}, invalidArg("agent id is empty")
	}
	// The version is read before the stamp: a commit racing with the query
	// changes the next version, so the memo never outlives it.
	version, versioned, err := c.dataVersion(ctx)
	if err != nil {
		return BlocksStamp{}, fmt.Errorf("memory: blocks stamp of %q: %w", agent, err)
	}
	if s, hit := c.stamps.get(agent, version); versioned && hit {
		s.Local = c.localEdits.Load()
		return s, nil
	}
	st, err := c.prepared(ctx, stampQuery)
	if err != nil {
		return BlocksStamp{}, fmt.Errorf("memory: blocks stamp of %q: %w", agent, err)
	}
	var s BlocksStamp
	if err := st.QueryRowContext(ctx, genKey(agent), agent, agent).Scan(&s.Gen, &s.Blocks, &s.Seq); err != nil {
		return BlocksStamp{}, fmt.Errorf("memory: blocks stamp of %q: %w", agent, err)
	}
	if versioned {
		c.stamps.put(agent, version, s)
	}
	s.Local = c.localEdits.Load()
	return s, nil
}

// dataVersion reads the backend's data version (see driver.DataVersioner); ok
// is false when the backend cannot tell. Under WithVersionCheckOnce, the
// first read for this backend is reused.
func (c *Store) dataVersion(ctx context.Context) (int64, bool, error) {
	dv, ok := c.be.(driver.DataVersioner)
	if !ok {
		return 0, false, nil
	}
	once, _ := ctx.Value(versionCheckKey{}).(*versionCheck)
	if once == nil {
		return dv.DataVersion(ctx)
	}
	once.mu.Lock()
	defer once.mu.Unlock()
	if once.c != nil && once.c != c {
		return dv.DataVersion(ctx) // another Store's database: not what was read
	}
	if once.c == nil {
		v, ok, err := dv.DataVersion(ctx)
		if err != nil {
			return 0, false, err
		}
		once.c, once.v, once.ok = c, v, ok
	}
	return once.v, once.ok, nil
}

// versionCheckKey carries a versionCheck in a context. Unlike a write's
// extra work (writeTx, passed explicitly), this is what a context is for:
// it is scoped to one operation that spans many reads through any Store
// consumer (a builder holds only a Store and passes its ctx on), and it
// only lets those reads share one freshness check; it never changes what
// a write commits.
type versionCheckKey struct{}

// versionCheck is the data version read first under WithVersionCheckOnce,
// and the Store it was read for.
type versionCheck struct {
	mu sync.Mutex
	c  *Store // nil until read
	v  int64
	ok bool
}

// WithVersionCheckOnce returns a context under which the reads that can
// answer from memory (BlocksStamp, Messages; see Store) ask the database
// whether anything was committed once, at the first such read, instead of
// once each: the reads of one operation, such as building a prompt, see
// every commit that completed before that first check, which is the
// guarantee such an operation needs, for one check's price. A read that
// finds the data changed reads it, as always.
func WithVersionCheckOnce(ctx context.Context) context.Context {
	return context.WithValue(ctx, versionCheckKey{}, &versionCheck{})
}

// versionMemo keeps, per key, what a read returned with the data version
// read before it: while the version is the same, nothing was committed and
// the read would return the same. At most versionMemoSize keys (then it
// starts over).
type versionMemo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]memoEntry[V]
}

type memoEntry[V any] struct {
	version int64
	value   V
}

const versionMemoSize = 4096

func (m *versionMemo[K, V]) get(k K, version int64) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[k]
	return e.value, ok && e.version == version
}

func (m *versionMemo[K, V]) put(k K, version int64, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= versionMemoSize {
		m.m = map[K]memoEntry[V]{}
	}
	m.m[k] = memoEntry[V]{version: version, value: v}
}

// Writes run in Store.write, which never abandons a started transaction,
// so these helpers take no context.
//
// Every write that changes which blocks an agent sees, or a share's
// permission, bumps that agent's generation counter in the same
// transaction. Content and metadata changes need no bump: they raise
// last_seq or meta_ver, which the stamp sums. A history rebase (a new
// epoch) keeps last_seq and raises epoch, so the sum still grows; one that
// reset last_seq would have to bump the generations of the owner and the
// sharees, as deletion does.

const bumpGenSQL = `INSERT INTO meta (key, value) VALUES (?, 1)
	ON CONFLICT (key) DO UPDATE SET value = CAST(meta.value AS BIGINT) + 1`

// bumpGen bumps the generation counters of agents.
func bumpGen(tx *sql.Tx, agents ...string) error {
	for _, a := range agents {
		if _, err := tx.Exec(bumpGenSQL, genKey(a)); err != nil {
			return fmt.Errorf("bump blocks generation of %q: %w", a, err)
		}
	}
	return nil
}

// shareesOf lists the agents block id is shared with, in name order.
func shareesOf(ctx context.Context, tx *sql.Tx, id int64) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT agent FROM shares WHERE block_id = ? ORDER BY agent`, id)
	if err != nil {
		return nil, fmt.Errorf("list the sharees of block %d: %w", id, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("list the sharees of block %d: %w", id, err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// prepared returns a prepared statement of the read pool for query,
// preparing it once per Store: modernc.org/sqlite otherwise parses the SQL
// on every call, which costs as much as running a small indexed query.
func (c *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := c.rdb.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := c.stmts.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

// closeStmts closes the prepared statements (on Close).
func (c *Store) closeStmts() {
	c.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		c.stmts.Delete(k)
		return true
	})
}
