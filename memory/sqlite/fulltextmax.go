package sqlite

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/engram-go/engram/driver"
)

var _ driver.FullTextScale = SearchDialect{}

// FullTextMax is bm25's highest score for p.Terms over p.Index: Σ idf ·
// (k1 + 1), with FTS5's own statistics (its row count and each phrase's
// matching rows, store-wide as bm25 counts them).
func (SearchDialect) FullTextMax(ctx context.Context, q driver.Execer, p *driver.FullTextParams) (float64, error) {
	// One statement: FTS5 keeps its row count (and per-column token
	// totals) in the record of rowid 1 (FTS5_AVERAGES_ROWID) of its _data
	// table, as varints; each phrase's rows are counted by a MATCH.
	var b strings.Builder
	b.WriteString(`SELECT (SELECT block FROM ` + p.Index + `_data WHERE id = 1)`)
	args := make([]any, len(p.Terms))
	for i, t := range p.Terms {
		b.WriteString(`, (SELECT count(*) FROM ` + p.Index + ` WHERE ` + p.Index + ` MATCH ?)`)
		args[i] = ftsPhrase(t)
	}
	var avg []byte
	df := make([]int64, len(p.Terms))
	dest := make([]any, 0, 1+len(df))
	dest = append(dest, &avg)
	for i := range df {
		dest = append(dest, &df[i])
	}
	if err := q.QueryRowContext(ctx, b.String(), args...).Scan(dest...); err != nil {
		return 0, fmt.Errorf("sqlite: full-text statistics of %s: %w", p.Index, err)
	}
	rows, n := varint(avg)
	if n == 0 {
		return 0, fmt.Errorf("sqlite: row count of %s: %w", p.Index, errTruncatedAverages)
	}
	const k1 = 1.2
	var m float64
	for _, d := range df {
		idf := math.Log((float64(int64(rows)-d) + 0.5) / (float64(d) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		m += idf * (k1 + 1.0)
	}
	return m, nil
}

// varint decodes SQLite's variable-length integer (big-endian, 7 bits a
// byte, the ninth byte whole) at the start of b; n is 0 when b ends first.
func varint(b []byte) (v uint64, n int) {
	for i := 0; i < 9 && i < len(b); i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
