package search

import (
	"context"
	"fmt"
	"strings"
)

// The PostgreSQL legs. Full text: each searchable table has a generated
// tsvector column "fts" (english configuration, weighted like the FTS5
// columns: labels and tags A, descriptions and content B, rendered blocks
// and metadata values C) with a GIN index, ranked by ts_rank_cd with
// length normalisation. Queries go through the same sanitising as FTS5:
// only the letter/digit terms of queryTerms reach to_tsquery, joined by
// OR, so any string is a valid query.

// pgResult is kind.result in PostgreSQL's JSON functions.
var pgResult = map[ContentType]string{
	Blocks: `b.id, b.owner, b.label, b.rendered, '[]',
		json_build_object('block_type', b.block_type, 'description', b.description)::text, b.created_at, FALSE`,
	Archival: `a.id, a.agent, '', a.content, a.tags_json, a.metadata_json, a.created_at,
		a.valid_to IS NOT NULL`,
	Messages: `m.id, m.agent, '', m.content, '[]',
		json_build_object('role', m.role, 'name', m.name, 'batch_id', m.batch_id, 'seq', m.seq,
			'tool_call_id', m.tool_call_id)::text, m.created_at, FALSE`,
}

// tsQueryText is the to_tsquery input for sanitised terms: each term
// quoted (terms hold only letters and digits), OR-ed.
func tsQueryText(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = "'" + strings.ReplaceAll(t, "'", "''") + "'"
	}
	return strings.Join(q, " | ")
}

// tsNormalization is ts_rank_cd's normalisation: 1 divides by 1 + log of
// the document length, which on Cranfield ranked better than none or
// dividing by the length itself.
const tsNormalization = 1

// tsSearch is ftsSearch on PostgreSQL. Source.BM25 holds the negated rank
// (lower is better, as for FTS5's bm25).
func (x *Index) tsSearch(ctx context.Context, k *kind, tsq, where string, fargs []any, limit int) ([]*Result, error) {
	q := fmt.Sprintf(`WITH q AS (SELECT to_tsquery('english', ?) AS q),
		top AS MATERIALIZED (
			SELECT %[3]s.id AS id, ts_rank_cd(%[3]s.fts, q.q, %[5]d) AS score
			FROM %[2]s %[3]s, q
			WHERE %[3]s.fts @@ q.q AND %[4]s
			ORDER BY score DESC, %[3]s.id LIMIT %[6]d)
		SELECT %[1]s, top.score
		FROM top JOIN %[2]s %[3]s ON %[3]s.id = top.id
		ORDER BY top.score DESC, top.id`,
		pgResult[k.t], k.base, k.alias, where, tsNormalization, limit)
	rows, err := x.db.QueryContext(ctx, q, append([]any{tsq}, fargs...)...)
	if err != nil {
		return nil, fmt.Errorf("search: fts %s: %w", k.name, err)
	}
	defer rows.Close()
	var out []*Result
	for rows.Next() {
		var rank float64
		r, err := scanResult(rows, k, &rank)
		if err != nil {
			return nil, fmt.Errorf("search: fts %s: %w", k.name, err)
		}
		r.Source.FTSRank = len(out) + 1
		r.Source.BM25 = -rank
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: fts %s: %w", k.name, err)
	}
	return out, nil
}

// flushBlocksPG indexes the blocks written since their last search
// (fts_blocks_dirty): one indexed read when nothing changed.
func (x *Index) flushBlocksPG(ctx context.Context) error {
	var dirty bool
	if err := x.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM fts_blocks_dirty)`).Scan(&dirty); err != nil {
		return fmt.Errorf("search: check block index: %w", err)
	}
	if !dirty {
		return nil
	}
	err := x.withWriteLock(ctx, func(ex Execer) error {
		if _, err := ex.ExecContext(ctx, `UPDATE blocks SET fts =
			setweight(to_tsvector('english', label), 'A') ||
			setweight(to_tsvector('english', description), 'B') ||
			setweight(to_tsvector('english', rendered), 'C')
			WHERE id IN (SELECT id FROM fts_blocks_dirty)`); err != nil {
			return err
		}
		_, err := ex.ExecContext(ctx, `DELETE FROM fts_blocks_dirty`)
		return err
	})
	if err != nil {
		return fmt.Errorf("search: re-index changed blocks: %w", err)
	}
	return nil
}
