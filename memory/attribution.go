package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Who made a change is what its commit message says (package blocks
// writes the agent and the operation there), except for changes merged
// from outside the store (MergeChanges: an automerge-repo peer over
// engram serve's /sync, automerge JS, a fork), whose messages are the
// peer's: they may name anyone, or no one. For those the store records,
// in the merge's write transaction, the agent it merged them as
// (merged_changes: block, change hash, agent), and a block's history
// names that agent, with op merge, whatever the message says (the entry
// is the managed document's blockseam.Attributor; BlockHistory attributes
// archived epochs too). The record is keyed by change hash, so it holds
// across compactions and epochs (the change stays in the block's
// history), reaches every process that reads the database, and goes with
// the block (ON DELETE CASCADE). Export carries it (DumpBlock.MergedBy).

// mergedRowsPerInsert bounds the rows of one INSERT into merged_changes
// (three parameters each; SQLite allows 32,766, PostgreSQL 65,535).
const mergedRowsPerInsert = 500

// recordMerged records, in the write transaction tx, that agent merged
// the changes hashes into e's block. A change already recorded keeps its
// first agent (a merge brings in only changes new to the block, so none
// is recorded twice but by a replay).
func (c *Store) recordMerged(ctx context.Context, tx *sql.Tx, e *entry, hashes []string, agent string) error {
	return insertMerged(ctx, tx, e.id, hashes, func(string) string { return agent })
}

// insertMerged inserts merged_changes rows for block id: each of hashes,
// merged by agentOf(hash).
func insertMerged(ctx context.Context, tx *sql.Tx, id int64, hashes []string, agentOf func(hash string) string) error {
	for len(hashes) > 0 {
		n := min(len(hashes), mergedRowsPerInsert)
		var q strings.Builder
		q.WriteString(`INSERT INTO merged_changes (block_id, hash, agent) VALUES `)
		args := make([]any, 0, 3*n)
		for i, h := range hashes[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?)")
			args = append(args, id, h, agentOf(h))
		}
		q.WriteString(` ON CONFLICT (block_id, hash) DO NOTHING`)
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("record the merged changes: %w", err)
		}
		hashes = hashes[n:]
	}
	return nil
}

const mergedByQuery = `SELECT hash, agent FROM merged_changes WHERE block_id = ?`

// MergedBy returns who merged each change merged into the block from
// outside the store, by change hash (blockseam.Attributor: the history of
// the managed document and its views names them).
//
// The lookup outlives the caller's context (a view whose context ended
// still reads its history, as it reads its value), and once the store is
// closed the records last read stand: a merge after them would have had to
// go through this store, which is closed.
func (e *entry) MergedBy(ctx context.Context) (map[string]string, error) {
	m, err := e.c.mergedBy(context.WithoutCancel(ctx), e.id)
	e.mergedMu.Lock()
	defer e.mergedMu.Unlock()
	if err == nil {
		e.mergedLast, e.mergedRead = m, true
		return m, nil
	}
	if e.mergedRead && errors.Is(e.c.checkOpen(context.Background()), ErrClosed) {
		return e.mergedLast, nil
	}
	return nil, err
}

// mergedBy reads block id's merged_changes rows.
func (c *Store) mergedBy(ctx context.Context, id int64) (map[string]string, error) {
	st, err := c.prepared(ctx, mergedByQuery)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out map[string]string
	for rows.Next() {
		var h, agent string
		if err := rows.Scan(&h, &agent); err != nil {
			return nil, err
		}
		if out == nil {
			out = map[string]string{}
		}
		out[h] = agent
	}
	return out, rows.Err()
}
