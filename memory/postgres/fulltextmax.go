package postgres

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/engram-go/engram/driver"
)

var _ driver.FullTextScale = SearchDialect{}

// FullTextMax is FullText's highest score for p.Terms: Σ idf, with each
// term's idf counted as FullText counts it (over the rows the leg keeps
// that match any term, with the table's row estimate as N), times
// ts_rank's ceiling for one term under normalisation 1, which is 1 (a
// one-lexeme row holding the term at weight A infinitely often). As in
// FullText, hits holds in-memory copies of the tsvectors: the per-term
// counts would otherwise decompress each stored one once per term
// (BenchmarkFullTextScalePostgres). The statement is FullText's up to df
// (ftsStats).
func (SearchDialect) FullTextMax(ctx context.Context, q driver.Execer, p *driver.FullTextParams) (float64, error) {
	stats, args := ftsStats(p)
	ds := make([]string, len(p.Terms))
	for i := range ds {
		ds[i] = fmt.Sprintf("df.d%d", i)
	}
	stmt := stats + ` SELECT ` + strings.Join(append(ds, "df.n"), ", ") + ` FROM df`
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
