package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/searchindex"
)

// Admin is a store's operator side: what tools such as "engram stats",
// "engram compact" and the web UI read and do across every agent, through
// the API rather than SQL against the schema, so that a schema change
// breaks them at compile time, not at run time. Get one with Store.Admin;
// it holds nothing but the store, and its methods fail with ErrClosed
// once the store is closed.
//
// Admin does not check permissions: it is for whoever holds the store
// itself, not for an agent.
type Admin struct{ c *Store }

// Admin returns the store's operator side.
func (c *Store) Admin() *Admin { return &Admin{c: c} }

// Stats describe a store: its backend, how it searches, and how many rows
// (and bytes) of each kind it holds.
type Stats struct {
	Backend       string // the backend's Name: "sqlite", "postgres"
	SchemaVersion int    // migrations the database has applied
	// Embedder and EmbedderDims are the embedder the store's vectors were
	// made with ("" and 0 before any), whatever this process opened it
	// with.
	Embedder     string
	EmbedderDims int
	// VectorEngine is where this process runs vector search: "in-process"
	// (the vector cache, Options.VectorCacheBytes), "sqlite-vec" (an exact
	// scan in SQLite), "pgvector" (PostgreSQL's HNSW index), or "" when it
	// opened the store without an embedder. VectorEngineReason says why not
	// in the database's index when it could have been (for pgvector: the
	// error creating the extension, its version, or VectorCacheBytes).
	VectorEngine       string
	VectorEngineReason string
	Counts             Counts
}

// Counts are a store's rows by kind, and the bytes of its block history.
type Counts struct {
	Agents           int64 // ids owning a block, archival entry or message, or holding a share
	Blocks           int64
	BlockUpdates     int64 // updates not yet folded into a snapshot
	Shares           int64
	Archival         int64 // entries, superseded ones included
	ArchivalCurrent  int64 // entries not superseded
	Messages         int64
	Batches          int64
	Summaries        int64
	ProposalsPending int64
	SnapshotBytes    int64 // of the blocks' current snapshots
	UpdateBytes      int64 // of the updates
	ArchivedEpochs   int64 // block histories archived by a rebase
	ArchiveBytes     int64 // of those
}

// agentsQuery lists every agent that owns something, has a block shared
// with it or has a profile.
const agentsQuery = `SELECT owner FROM blocks UNION SELECT agent FROM archival UNION SELECT agent FROM messages UNION SELECT agent FROM shares
	UNION SELECT agent FROM agent_profiles`

// Stats counts the store's rows.
func (a *Admin) Stats(ctx context.Context) (*Stats, error) {
	c := a.c
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	st := &Stats{Backend: c.be.Name()}
	n := &st.Counts
	for _, q := range []struct {
		dst  *int64
		name string
		sql  string
	}{
		{&n.Agents, "agents", `SELECT count(*) FROM (` + agentsQuery + `) AS agents`},
		{&n.Blocks, "blocks", `SELECT count(*) FROM blocks`},
		{&n.BlockUpdates, "block updates", `SELECT count(*) FROM block_updates`},
		{&n.Shares, "shares", `SELECT count(*) FROM shares`},
		{&n.Archival, "archival entries", `SELECT count(*) FROM archival`},
		{&n.ArchivalCurrent, "current archival entries", `SELECT count(*) FROM archival WHERE valid_to IS NULL`},
		{&n.Messages, "messages", `SELECT count(*) FROM messages`},
		{&n.Batches, "batches", `SELECT count(*) FROM batches`},
		{&n.Summaries, "summaries", `SELECT count(*) FROM summaries`},
		{&n.ProposalsPending, "pending proposals", `SELECT count(*) FROM proposals WHERE status = 'pending'`},
		{&n.SnapshotBytes, "snapshot bytes", `SELECT COALESCE(sum(length(snapshot)), 0) FROM block_snapshots`},
		{&n.UpdateBytes, "update bytes", `SELECT COALESCE(sum(length(data)), 0) FROM block_updates`},
		{&n.ArchivedEpochs, "archived epochs", `SELECT count(*) FROM block_archive`},
		{&n.ArchiveBytes, "archive bytes", `SELECT COALESCE(sum(length(snapshot)), 0) FROM block_archive`},
	} {
		if err := c.rdb.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			return nil, fmt.Errorf("memory: stats: count %s: %w", q.name, err)
		}
	}
	var err error
	if st.SchemaVersion, _, err = c.be.SchemaVersion(ctx); err != nil {
		return nil, fmt.Errorf("memory: stats: schema version: %w", err)
	}
	if st.Embedder, st.EmbedderDims, err = searchindex.RecordedEmbedder(ctx, c.rdb); err != nil {
		return nil, fmt.Errorf("memory: stats: %w", err)
	}
	st.VectorEngine = c.index.VectorEngine()
	st.VectorEngineReason = c.index.VectorEngineReason()
	return st, nil
}

// RecordedEmbedder returns the name and dimensions of the embedder the
// store's vectors were made with, or "" and 0 before any: what a tool
// opening the store without choosing an embedder should open it with.
func (a *Admin) RecordedEmbedder(ctx context.Context) (name string, dims int, err error) {
	if err := a.c.checkOpen(ctx); err != nil {
		return "", 0, err
	}
	if name, dims, err = searchindex.RecordedEmbedder(ctx, a.c.rdb); err != nil {
		return "", 0, fmt.Errorf("memory: %w", err)
	}
	return name, dims, nil
}

// Agents returns every agent id that owns a block, an archival entry or a
// message, holds a share or has a profile, sorted.
func (a *Admin) Agents(ctx context.Context) ([]string, error) {
	if err := a.c.checkOpen(ctx); err != nil {
		return nil, err
	}
	rows, err := a.c.rdb.QueryContext(ctx, agentsQuery)
	if err != nil {
		return nil, fmt.Errorf("memory: list agents: %w", err)
	}
	out, err := scanAll(rows, func(r *sql.Rows) (s string, err error) { return s, r.Scan(&s) })
	if err != nil {
		return nil, fmt.Errorf("memory: list agents: %w", err)
	}
	sort.Strings(out)
	return out, nil
}

// ProposalCount is how many proposals target an owner's blocks and
// archival memory.
type ProposalCount struct {
	All     int // whatever their status
	Pending int // awaiting a decision
}

// ProposalCounts returns, per owner with any proposal, how many proposals
// target the owner's blocks or archival memory (consolidation's merges):
// one query, for a view that polls.
func (a *Admin) ProposalCounts(ctx context.Context) (map[string]ProposalCount, error) {
	if err := a.c.checkOpen(ctx); err != nil {
		return nil, err
	}
	rows, err := a.c.rdb.QueryContext(ctx, `SELECT COALESCE(b.owner, p.proposer) o, count(*), count(CASE WHEN p.status = 'pending' THEN 1 END)
		FROM proposals p LEFT JOIN blocks b ON b.id = p.block_id GROUP BY COALESCE(b.owner, p.proposer)`)
	if err != nil {
		return nil, fmt.Errorf("memory: count proposals: %w", err)
	}
	type ownerCount struct {
		owner string
		n     ProposalCount
	}
	counts, err := scanAll(rows, func(r *sql.Rows) (oc ownerCount, err error) {
		return oc, r.Scan(&oc.owner, &oc.n.All, &oc.n.Pending)
	})
	if err != nil {
		return nil, fmt.Errorf("memory: count proposals: %w", err)
	}
	out := make(map[string]ProposalCount, len(counts))
	for _, oc := range counts {
		out[oc.owner] = oc.n
	}
	return out, nil
}

// CompactOptions choose what Admin.Compact compacts. The zero value (or
// nil) compacts every block of every agent.
type CompactOptions struct {
	// Owner limits compaction to one agent's blocks.
	Owner string
	// Rebase also starts each block on a new epoch (see Block.Rebase):
	// its history is archived, and loading reads only the current value.
	Rebase bool
	// Progress, if set, is called after each block with the blocks done
	// and the total.
	Progress func(done, total int)
}

// Compact folds the updates of every block (or one owner's) into its
// snapshot, one block at a time in creation order, as Block.Compact (or
// Block.Rebase) does. A block deleted meanwhile is skipped. It returns how
// many blocks it went through; on an error, the blocks before it stay
// compacted.
func (a *Admin) Compact(ctx context.Context, opts *CompactOptions) (int, error) {
	var o CompactOptions
	if opts != nil {
		o = *opts
	}
	c := a.c
	if err := c.checkOpen(ctx); err != nil {
		return 0, err
	}
	q, args := `SELECT owner, label FROM blocks ORDER BY id`, []any(nil)
	if o.Owner != "" {
		q, args = `SELECT owner, label FROM blocks WHERE owner = ? ORDER BY id`, []any{o.Owner}
	}
	rows, err := c.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("memory: compact: list blocks: %w", err)
	}
	todo, err := scanAll(rows, func(r *sql.Rows) (b [2]string, err error) { return b, r.Scan(&b[0], &b[1]) })
	if err != nil {
		return 0, fmt.Errorf("memory: compact: list blocks: %w", err)
	}
	compact := c.compactBlock
	if o.Rebase {
		compact = c.rebaseBlock
	}
	for i, b := range todo {
		if err := compact(ctx, b[0], b[1]); err != nil && !errors.Is(err, ErrNotFound) {
			return i, fmt.Errorf("memory: compact block %q of %q: %w", b[1], b[0], err)
		}
		if o.Progress != nil {
			o.Progress(i+1, len(todo))
		}
	}
	return len(todo), nil
}

// scanAll reads every row with scan and closes rows.
func scanAll[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// DeleteBlock deletes owner's block label and its shares as the system:
// whatever the owner's permission on it. Through an agent's handle
// ([Block.Delete]) the owner needs Admin; a block created at the default
// ReadWrite can be deleted only here. A block that does not exist is an
// error matching ErrNotFound.
func (a *Admin) DeleteBlock(ctx context.Context, owner, label string) error {
	if err := a.c.checkOpen(ctx); err != nil {
		return err
	}
	if err := checkIDs(owner, label); err != nil {
		return err
	}
	return a.c.deleteBlockAs(ctx, blocks.System, owner, label)
}

// SetBlockPermission sets the owner's own permission on its block label
// as the system, raising it as well as lowering it: an agent can lower
// its permission through [Block.SetPermission] only while it holds
// Admin, so granting Admin (to let an agent delete or reconfigure its
// block) is done here. A share's permission is set by sharing again.
func (a *Admin) SetBlockPermission(ctx context.Context, owner, label string, p blocks.Permission) error {
	if err := a.c.checkOpen(ctx); err != nil {
		return err
	}
	if err := checkIDs(owner, label); err != nil {
		return err
	}
	return a.c.setBlockPermissionAs(ctx, blocks.System, owner, label, p)
}
