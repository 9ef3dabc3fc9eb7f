package search

import (
	"context"
	"fmt"
	"math"
	"sort"
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
	Messages: `m.id, m.agent, '', m.content, '[]', ` + pgResultMessageMeta + `, m.created_at, FALSE`,
}

// pgResultMessageMeta is a message's metadata object as results show it
// (messageMeta on SQLite).
const pgResultMessageMeta = `json_build_object('role', m.role, 'name', m.name, 'batch_id', m.batch_id, 'seq', m.seq,
	'tool_call_id', m.tool_call_id)::text`

// tsQueryText is the to_tsquery input for sanitised terms: each term
// quoted (terms hold only letters and digits), OR-ed.
func tsQueryText(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = "'" + strings.ReplaceAll(t, "'", "''") + "'"
	}
	return strings.Join(q, " | ")
}

// tsSearch is ftsSearch on PostgreSQL. ts_rank alone has no notion of how
// rare a term is, so each term's ts_rank (normalised by 1 + log length) is
// weighted by its BM25 inverse document frequency, counted over the rows
// the query matches, with the table's row estimate (at least the matches)
// as N. On Cranfield this scores nDCG@10 0.533 against 0.482 for plain
// ts_rank and 0.40 for ts_rank_cd (SQLite's FTS5 BM25: 0.550).
// Source.BM25 holds the negated score (lower is better, as for FTS5).
//
// hits holds each matching row's tsvector detoasted once (the
// concatenation with an empty tsvector makes an in-memory copy): a stored
// tsvector is compressed or out of line, and the per-term counts and
// ranks below read it twice per query term, each read decompressing it
// again (the figures are in docs/performance.md, "Figures that were in
// code comments").
func (x *Index) tsSearch(ctx context.Context, k *kind, terms []string, where string, fargs []any, limit int) ([]*Result, error) {
	var cols, dfs, score []string
	args := make([]any, 0, len(terms)+1+len(fargs))
	for i, t := range terms {
		args = append(args, tsQueryText([]string{t}))
		cols = append(cols, fmt.Sprintf("to_tsquery('english', ?) AS q%d", i))
		dfs = append(dfs, fmt.Sprintf("count(*) FILTER (WHERE hits.fts @@ tq.q%d) AS d%d", i, i))
		score = append(score, fmt.Sprintf("ln(1 + (df.n - df.d%[1]d + 0.5) / (df.d%[1]d + 0.5)) * ts_rank(hits.fts, tq.q%[1]d, 1)", i))
	}
	args = append(args, tsQueryText(terms))
	args = append(args, fargs...)
	q := fmt.Sprintf(`WITH tq AS (SELECT %[1]s, to_tsquery('english', ?) AS qall),
		hits AS MATERIALIZED (
			SELECT %[3]s.id AS id, (%[3]s.fts || ''::tsvector) AS fts FROM %[2]s %[3]s, tq
			WHERE %[3]s.fts @@ tq.qall AND %[4]s),
		df AS MATERIALIZED (SELECT %[5]s,
			greatest((SELECT reltuples FROM pg_class WHERE oid = '%[2]s'::regclass), count(*), 1) AS n
			FROM hits, tq),
		top AS MATERIALIZED (
			SELECT hits.id AS id, (%[6]s) AS score FROM hits, tq, df
			ORDER BY score DESC, hits.id LIMIT %[7]d)
		SELECT %[8]s, top.score
		FROM top JOIN %[2]s %[3]s ON %[3]s.id = top.id
		ORDER BY top.score DESC, top.id`,
		strings.Join(cols, ", "), k.base, k.alias, where, strings.Join(dfs, ", "), strings.Join(score, " + "), limit, pgResult[k.t])
	return x.rankedRows(ctx, k, q, args, -1)
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
	err := x.withWriteLock(ctx, func(ctx context.Context, ex Execer) error {
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

// scanDistances is the exact-distance fallback where SQLite has
// vec_distance_cosine: q selects the result columns and then the row's
// embedding; the cosine distances are computed here, nearest first.
func (x *Index) scanDistances(ctx context.Context, k *kind, qvec []byte, q string, args []any, limit int) ([]*Result, error) {
	qv, err := blobVector(qvec)
	if err != nil {
		return nil, err
	}
	if math.IsNaN(CosineDistance(qv, qv)) {
		return nil, nil // a zero query vector has no distance to anything
	}
	rows, err := x.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
	}
	defer rows.Close()
	var out []*Result
	for rows.Next() {
		var blob []byte
		r, err := scanResult(rows, k, &blob)
		if err != nil {
			return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
		}
		v, err := blobVector(blob)
		if err != nil {
			// A torn row is reported, never skipped.
			return nil, fmt.Errorf("search: vector %s row %d: %w", k.name, r.ID, err)
		}
		d := CosineDistance(qv, v)
		if math.IsNaN(d) {
			continue // another embedder's dimension (Reembed replaces it) or a zero vector (NULL distance in SQLite)
		}
		r.Source.Distance = d
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Source.Distance != out[j].Source.Distance {
			return out[i].Source.Distance < out[j].Source.Distance
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// VectorEngine names what answers vector searches: "sqlite-vec" (an exact
// scan in SQLite with sqlite-vec's vec_distance_cosine), "pgvector" (PostgreSQL's vector extension, HNSW),
// "in-process" (the vector cache: SQLite's default, on request on
// PostgreSQL, and there without pgvector; the database engine answers
// while it loads), or "" without an embedder.
func (x *Index) VectorEngine() string {
	switch {
	case x.emb == nil:
		return ""
	case x.cache != nil && !x.cache.dropped():
		return "in-process"
	case x.pgvSearch:
		return "pgvector"
	default:
		return "sqlite-vec"
	}
}

// VectorEngineReason says why a PostgreSQL Index does not use pgvector
// (the error creating the extension, its version, or VectorCacheBytes); "" when
// it does, or on SQLite.
func (x *Index) VectorEngineReason() string { return x.pgvReason }
