package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/engram-go/engram/driver"
)

var _ driver.TextStats = SearchDialect{}

// ftsIndexes are the FTS5 tables TextStats reads (their names go into the
// SQL text, so only these).
var ftsIndexes = map[string]bool{"fts_blocks": true, "fts_archival": true, "fts_messages": true}

// TextTotals reads FTS5's averages record (the %_data row 1: the row
// count, then each column's token total, as varints), which is what
// bm25's xRowCount and xColumnTotalSize(-1) return.
func (SearchDialect) TextTotals(ctx context.Context, q driver.Execer, index string) (rows, tokens int64, err error) {
	if !ftsIndexes[index] {
		return 0, 0, fmt.Errorf("sqlite: text totals of %q: %w", index, errNotFTSIndex)
	}
	var rec []byte
	err = q.QueryRowContext(ctx, `SELECT block FROM `+index+`_data WHERE id = 1`).Scan(&rec)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, 0, nil // an index never written to
	case err != nil:
		return 0, 0, fmt.Errorf("sqlite: text totals of %s: %w", index, err)
	}
	v, n := varint(rec)
	if n == 0 {
		return 0, 0, nil
	}
	rows = int64(v)
	for rec = rec[n:]; len(rec) > 0; rec = rec[n:] {
		if v, n = varint(rec); n == 0 {
			return 0, 0, fmt.Errorf("sqlite: text totals of %s: %w", index, errTruncatedAverages)
		}
		tokens += int64(v)
	}
	return rows, tokens, nil
}

// TextDocFreq counts the rows matching the term as a phrase: what bm25
// counts for a phrase's IDF (xQueryPhrase). FTS5 reads only the term's
// doclist.
func (SearchDialect) TextDocFreq(ctx context.Context, q driver.Execer, index, term string) (int64, error) {
	if !ftsIndexes[index] {
		return 0, fmt.Errorf("sqlite: document frequency in %q: %w", index, errNotFTSIndex)
	}
	var n int64
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM `+index+` WHERE `+index+` MATCH ?`, ftsPhrase(term)).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: document frequency of %q in %s: %w", term, index, err)
	}
	return n, nil
}

// ftsPhrase quotes term as an FTS5 phrase, which is how bm25 counts a
// query term's rows.
func ftsPhrase(term string) string {
	return `"` + strings.ReplaceAll(term, `"`, `""`) + `"`
}

var _ driver.TextVocabulary = SearchDialect{}

// TextVocabulary reads index's vocabulary through an fts5vocab table of
// its rows (each term and the rows that hold it: what TextDocFreq counts
// one term at a time), made in the connection's temp schema on first use:
// it stores nothing, and no migration adds it.
func (SearchDialect) TextVocabulary(ctx context.Context, q driver.Execer, index string, fn func(term string, rows int64) error) error {
	if !ftsIndexes[index] {
		return fmt.Errorf("sqlite: vocabulary of %q: %w", index, errNotFTSIndex)
	}
	vocab := `temp.` + index + `_vocab`
	if _, err := q.ExecContext(ctx, `CREATE VIRTUAL TABLE IF NOT EXISTS `+vocab+` USING fts5vocab(main, `+index+`, row)`); err != nil {
		return fmt.Errorf("sqlite: vocabulary of %s: %w", index, err)
	}
	rows, err := q.QueryContext(ctx, `SELECT term, doc FROM `+vocab)
	if err != nil {
		return fmt.Errorf("sqlite: vocabulary of %s: %w", index, err)
	}
	defer rows.Close()
	for rows.Next() {
		var term string
		var n int64
		if err := rows.Scan(&term, &n); err != nil {
			return fmt.Errorf("sqlite: vocabulary of %s: %w", index, err)
		}
		if err := fn(term, n); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: vocabulary of %s: %w", index, err)
	}
	return nil
}
