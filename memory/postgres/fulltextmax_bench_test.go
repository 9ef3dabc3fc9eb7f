package postgres

import (
	"context"
	"strings"
	"testing"
	"unicode"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/search"
)

// BenchmarkFullTextScalePostgres: a full-text leg's statement (FullText,
// limit 10) beside the statement that finds its scale (FullTextMax), on
// Cranfield's abstracts as archival entries, for Cranfield's queries. A
// multi-type search ranked in SQL runs both per leg. FullTextMax read each
// matching row's stored tsvector once per query term, decompressing it
// every time, and cost almost as much as the leg itself; it now matches on
// an in-memory copy as FullText does (-benchtime 100x, busy 2-core
// machine: 19.1 ms beside a 21.8 ms leg before, 8.8 ms beside 15.4 after).
func BenchmarkFullTextScalePostgres(b *testing.B) {
	dir := eval.FindCranfield()
	if dir == "" {
		b.Skip("Cranfield not found")
	}
	c, err := eval.LoadCranfield(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	srv := pgtest.Start(b)
	be, err := Open(ctx, srv.NewDatabase(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	db := be.DB()
	for _, d := range c.Docs {
		if _, err := db.ExecContext(ctx, `INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
			VALUES ('a', ?, '{}', '[]', '', 1, 1)`, d.Title+"\n"+d.Body); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `ANALYZE archival`); err != nil {
		b.Fatal(err)
	}
	var terms [][]string
	for _, q := range c.Queries {
		var ts []string
		for _, w := range strings.FieldsFunc(strings.ToLower(q.Text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if !search.IsStopword(w) {
				ts = append(ts, w)
			}
		}
		if len(ts) > 0 {
			terms = append(terms, ts)
		}
	}
	params := func(i int) *driver.FullTextParams {
		return &driver.FullTextParams{Table: "archival", Alias: "a", Terms: terms[i%len(terms)],
			Where: "a.agent = ? AND a.valid_to IS NULL", Args: []any{"a"}, Columns: "a.id", Limit: 10}
	}
	d := SearchDialect{}
	b.Run("fulltext", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			q, args, _ := d.FullText(params(i))
			rows, err := db.QueryContext(ctx, q, args...)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
		}
	})
	b.Run("max", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := d.FullTextMax(ctx, db, params(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
