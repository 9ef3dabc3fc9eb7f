package postgres

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/engram-go/engram/search"
)

var _ search.FullTextScale = SearchDialect{}

// FullTextMax is FullText's highest score for p.Terms: Σ idf, with each
// term's idf counted as FullText counts it (over the rows the leg keeps
// that match any term, with the table's row estimate as N), times
// ts_rank's ceiling for one term under normalisation 1, which is 1 (a
// one-lexeme row holding the term at weight A infinitely often).
func (SearchDialect) FullTextMax(ctx context.Context, q search.Execer, p *search.FullTextParams) (float64, error) {
	var cols, dfs []string
	args := make([]any, 0, len(p.Terms)+1+len(p.Args))
	for i, t := range p.Terms {
		args = append(args, tsQueryText([]string{t}))
		cols = append(cols, fmt.Sprintf("to_tsquery('english', ?) AS q%d", i))
		dfs = append(dfs, fmt.Sprintf("count(*) FILTER (WHERE hits.fts @@ tq.q%d)", i))
	}
	args = append(args, tsQueryText(p.Terms))
	args = append(args, p.Args...)
	stmt := fmt.Sprintf(`WITH tq AS (SELECT %[1]s, to_tsquery('english', ?) AS qall),
		hits AS MATERIALIZED (SELECT %[3]s.fts AS fts FROM %[2]s %[3]s, tq WHERE %[3]s.fts @@ tq.qall AND %[4]s)
		SELECT %[5]s, greatest((SELECT reltuples FROM pg_class WHERE oid = '%[2]s'::regclass), count(*), 1)
		FROM hits, tq`, strings.Join(cols, ", "), p.Table, p.Alias, p.Where, strings.Join(dfs, ", "))
	df := make([]int64, len(p.Terms))
	var n float64
	dest := make([]any, 0, len(df)+1)
	for i := range df {
		dest = append(dest, &df[i])
	}
	dest = append(dest, &n)
	if err := q.QueryRowContext(ctx, stmt, args...).Scan(dest...); err != nil {
		return 0, fmt.Errorf("postgres: full-text statistics of %s: %w", p.Table, err)
	}
	var m float64
	for _, d := range df {
		m += math.Log(1 + (n-float64(d)+0.5)/(float64(d)+0.5))
	}
	return m, nil
}
