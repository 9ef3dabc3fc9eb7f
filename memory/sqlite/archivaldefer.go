package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// DeferArchivalIndex implements driver.ArchivalIndexDeferrer: the row -1
// of archival_index_deferred (migration 0035) turns the archival insert
// triggers' indexing off.
func (b *Backend) DeferArchivalIndex(ctx context.Context, tx *sql.Tx) error {
	if _, err := b.txExec(ctx, tx, archivalDefer); err != nil {
		return fmt.Errorf("sqlite: defer the archival index: %w", err)
	}
	return nil
}

const archivalDefer = `INSERT OR IGNORE INTO archival_index_deferred (id) VALUES (-1)`

// archivalFollowing adds to archival_touched the entries after those it
// holds.
const archivalFollowing = `INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_adjacent WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL`

// archivalFlush re-indexes the entries inserted (the JSON array of ids
// its first statement takes), the
// entries before them (live and any: their entry after may now be one of
// them), and the two entries after each of these (whose entry before, or
// second entry before, may now be one of them), in one statement each:
// one FTS5 segment for the whole batch. Inserts only add entries, so
// every entry whose context they changed is so near one of them in the
// rows as they stand at the end.
var archivalFlush = []string{
	`INSERT OR IGNORE INTO archival_touched (id) SELECT value FROM json_each(?)`,
	`DELETE FROM archival_index_deferred`,
	`INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_preceding WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL`,
	archivalFollowing, // the entries after: their entry before changed
	archivalFollowing, // the entries after those: their second entry before changed
	`INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
		SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
		WHERE id IN (SELECT id FROM archival_touched)`,
	`INSERT INTO search_text_log (kind, id) SELECT 2, id FROM archival_touched`,
	`DELETE FROM archival_touched`,
}

// FlushArchivalIndex implements driver.ArchivalIndexDeferrer.
func (b *Backend) FlushArchivalIndex(ctx context.Context, tx *sql.Tx, ids []int64) error {
	js, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("sqlite: index the deferred archival entries: %w", err)
	}
	for i, q := range archivalFlush {
		var args []any
		if i == 0 {
			args = []any{string(js)}
		}
		if _, err := b.txExec(ctx, tx, q, args...); err != nil {
			return fmt.Errorf("sqlite: index the deferred archival entries: %w", err)
		}
	}
	return nil
}

// PrepareArchivalIndex implements driver.ArchivalIndexDeferrer: the
// flush's statements read views that take milliseconds to parse.
func (b *Backend) PrepareArchivalIndex(ctx context.Context) error {
	return b.Prepare(ctx, append([]string{archivalDefer}, archivalFlush...)...)
}

// txExec runs query in tx through its prepared statement, when Prepare
// made one.
func (b *Backend) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := b.TxStmt(ctx, tx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}
