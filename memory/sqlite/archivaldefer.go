package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
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

// The flush re-indexes the entries inserted (a JSON array of ids in each
// statement's one argument), the entries before them (live and any:
// their entry after may now be one of them) and the two entries after
// each (whose entry before, or second entry before, may now be one of
// them), in one FTS5 statement: one segment for the whole batch. Inserts
// only add entries, so every entry whose context they changed is so near
// one of them in the rows as they stand at the end. The second entries
// after are looked up only from the first ones that are not themselves
// inserted: the entries after an inserted one are in the first lookup.
const (
	archivalPreceding = `SELECT adj FROM archival_preceding WHERE id IN (SELECT value FROM json_each(?)) AND adj IS NOT NULL`
	archivalFollowing = `SELECT adj FROM archival_adjacent WHERE id IN (SELECT value FROM json_each(?)) AND adj IS NOT NULL`
	archivalReindex   = `INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
		SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
		WHERE id IN (SELECT value FROM json_each(?))`
	// archivalReindexLog logs the entries re-indexed besides the inserted
	// ones, which their insert trigger logged.
	archivalReindexLog = `INSERT INTO search_text_log (kind, id) SELECT 2, value FROM json_each(?)`
	archivalUndefer    = `DELETE FROM archival_index_deferred`
	// archivalPlaces reads the inserted entries' conversations and places
	// (the key from its index: the column is computed from the metadata).
	archivalPlaces = `SELECT a.id, a.agent, a.conversation_key, COALESCE(a.conversation_pos, a.id)
		FROM archival a INDEXED BY archival_conversation_by_id WHERE a.id IN (SELECT value FROM json_each(?))`
	// archivalBetween counts the entries of a conversation from one place
	// to another, both included.
	archivalBetween = `SELECT count(*) FROM archival INDEXED BY archival_conversation
		WHERE agent = ? AND conversation_key IS ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`
)

// FlushArchivalIndex implements driver.ArchivalIndexDeferrer.
func (b *Backend) FlushArchivalIndex(ctx context.Context, tx *sql.Tx, ids []int64) error {
	if err := b.flushArchivalIndex(ctx, tx, ids); err != nil {
		return fmt.Errorf("sqlite: index the deferred archival entries: %w", err)
	}
	return nil
}

func (b *Backend) flushArchivalIndex(ctx context.Context, tx *sql.Tx, ids []int64) error {
	if _, err := b.txExec(ctx, tx, archivalUndefer); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil // every entry of the batch merged into a stored one
	}
	inserted := make(map[int64]bool, len(ids))
	for _, id := range ids {
		inserted[id] = true
	}
	var others []int64 // the entries re-indexed besides the inserted ones
	seen := map[int64]bool{}
	add := func(id int64) {
		if !inserted[id] && !seen[id] {
			seen[id] = true
			others = append(others, id)
		}
	}
	edgesBefore, edgesAfter, err := b.batchEdges(ctx, tx, ids)
	if err != nil {
		return err
	}
	before, err := b.txIDs(ctx, tx, archivalPreceding, edgesBefore)
	if err != nil {
		return err
	}
	for _, id := range before {
		add(id)
	}
	after, err := b.txIDs(ctx, tx, archivalFollowing, edgesAfter)
	if err != nil {
		return err
	}
	var first []int64
	for _, id := range after {
		if !inserted[id] {
			first = append(first, id)
		}
		add(id)
	}
	if len(first) > 0 {
		second, err := b.txIDs(ctx, tx, archivalFollowing, first)
		if err != nil {
			return err
		}
		for _, id := range second {
			add(id)
		}
	}
	all, err := json.Marshal(append(others, ids...))
	if err != nil {
		return err
	}
	if _, err := b.txExec(ctx, tx, archivalReindex, string(all)); err != nil {
		return err
	}
	if len(others) > 0 {
		js, err := json.Marshal(others)
		if err != nil {
			return err
		}
		if _, err := b.txExec(ctx, tx, archivalReindexLog, string(js)); err != nil {
			return err
		}
	}
	return nil
}

// batchEdges returns the inserted entries whose entries before
// (edgesBefore) and after (edgesAfter) may be entries not inserted. The
// inserted entries of one conversation (or of one owner's stream) that
// no other entry comes between, as a batch appended to its conversation
// is, have only their first and last entry at the edge; in any other
// conversation every inserted entry is an edge.
func (b *Backend) batchEdges(ctx context.Context, tx *sql.Tx, ids []int64) (edgesBefore, edgesAfter []int64, err error) {
	js, err := json.Marshal(ids)
	if err != nil {
		return nil, nil, err
	}
	rows, err := b.txQuery(ctx, tx, archivalPlaces, string(js))
	if err != nil {
		return nil, nil, err
	}
	type conversation struct {
		agent string
		key   sql.NullString
	}
	type place struct{ id, at int64 }
	groups := map[conversation][]place{}
	var order []conversation
	for rows.Next() {
		var c conversation
		var p place
		if err := rows.Scan(&p.id, &c.agent, &c.key, &p.at); err != nil {
			rows.Close()
			return nil, nil, err
		}
		if _, ok := groups[c]; !ok {
			order = append(order, c)
		}
		groups[c] = append(groups[c], p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for _, c := range order {
		g := groups[c]
		slices.SortFunc(g, func(a, b place) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id)) })
		g = slices.CompactFunc(g, func(a, b place) bool { return a.id == b.id })
		if len(g) == 1 {
			edgesBefore = append(edgesBefore, g[0].id)
			edgesAfter = append(edgesAfter, g[0].id)
			continue
		}
		var between int
		if err := b.txRow(ctx, tx, archivalBetween, c.agent, c.key, g[0].at, g[len(g)-1].at).Scan(&between); err != nil {
			return nil, nil, err
		}
		if between == len(g) {
			edgesBefore = append(edgesBefore, g[0].id)
			edgesAfter = append(edgesAfter, g[len(g)-1].id)
			continue
		}
		for _, p := range g {
			edgesBefore = append(edgesBefore, p.id)
			edgesAfter = append(edgesAfter, p.id)
		}
	}
	return edgesBefore, edgesAfter, nil
}

// txQuery runs query in tx through its prepared statement, when Prepare
// made one.
func (b *Backend) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := b.TxStmt(ctx, tx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// txRow is txQuery for one row.
func (b *Backend) txRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := b.TxStmt(ctx, tx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// txIDs runs query, which selects ids, with ids as its JSON argument.
func (b *Backend) txIDs(ctx context.Context, tx *sql.Tx, query string, ids []int64) ([]int64, error) {
	js, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := b.txQuery(ctx, tx, query, string(js))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// PrepareArchivalIndex implements driver.ArchivalIndexDeferrer: the
// flush's statements read views that take milliseconds to parse.
func (b *Backend) PrepareArchivalIndex(ctx context.Context) error {
	return b.Prepare(ctx, archivalDefer, archivalPreceding, archivalFollowing, archivalReindex, archivalReindexLog, archivalUndefer, archivalPlaces, archivalBetween)
}

// txExec runs query in tx through its prepared statement, when Prepare
// made one.
func (b *Backend) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := b.TxStmt(ctx, tx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}
