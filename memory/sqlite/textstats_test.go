package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TextTotals and TextDocFreq return what FTS5 itself counts: checked
// against an fts5vocab table over the same index (its 'row' rows: per
// term, the rows holding it and its occurrences) after inserts, an edit
// and a delete.
func TestSearchDialectTextStats(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open(Driver, "file:"+filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, _, err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	d := SearchDialect{}
	if rows, tokens, err := d.TextTotals(ctx, db, "fts_archival"); err != nil || rows != 0 || tokens != 0 {
		t.Fatalf("empty index: %d rows, %d tokens, %v", rows, tokens, err)
	}
	for _, q := range []string{
		`CREATE VIRTUAL TABLE v USING fts5vocab(fts_archival, 'row')`,
		`INSERT INTO archival (agent, content, tags_text, created_at, valid_from) VALUES
			('a', 'wing flutter at mach two', 'wing', 0, 0),
			('a', 'Wings fluttering', '', 0, 0),
			('b', 'boundary layer', 'x y z', 0, 0)`,
		`UPDATE archival SET content = 'a boundary layer over the wing' WHERE id = 2`,
		`DELETE FROM archival WHERE id = 3`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Many rows: varints of more than one byte.
	for i := range 300 {
		if _, err := db.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('c', ?, 0, 0)`,
			"entry number "+string(rune('a'+i%26))+" boundary"); err != nil {
			t.Fatal(err)
		}
	}
	var wantRows, wantTokens int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM archival`).Scan(&wantRows); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT sum(cnt) FROM v`).Scan(&wantTokens); err != nil {
		t.Fatal(err)
	}
	rows, tokens, err := d.TextTotals(ctx, db, "fts_archival")
	if err != nil || rows != wantRows || tokens != wantTokens {
		t.Fatalf("TextTotals: %d rows, %d tokens, %v; want %d, %d", rows, tokens, err, wantRows, wantTokens)
	}
	for _, c := range []struct{ term, stem string }{
		{"wing", "wing"}, {"Wings", "wing"}, {"fluttering", "flutter"}, {"boundary", "boundari"}, {"absent", "absent"},
	} {
		var want int64
		if err := db.QueryRowContext(ctx, `SELECT coalesce((SELECT doc FROM v WHERE term = ?), 0)`, c.stem).Scan(&want); err != nil {
			t.Fatal(err)
		}
		got, err := d.TextDocFreq(ctx, db, "fts_archival", c.term)
		if err != nil || got != want {
			t.Fatalf("TextDocFreq(%q): %d, %v; want %d", c.term, got, err, want)
		}
	}
	if _, _, err := d.TextTotals(ctx, db, "archival"); err == nil {
		t.Fatal("TextTotals of a table that is not an FTS5 index: no error")
	}
}

// TextVocabulary lists every term of an index with the rows TextDocFreq
// counts for it, inside a read-only transaction (as a text cache's
// statistics pass reads it), on each connection of the pool, and twice on
// one (its temp table is made once).
func TestSearchDialectTextVocabulary(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open(Driver, "file:"+filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, _, err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	d := SearchDialect{}
	for i := range 200 {
		if _, err := db.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, created_at, valid_from) VALUES ('a', ?, ?, 0, 0)`,
			"entry number "+string(rune('a'+i%26))+" boundary layers", string(rune('k'+i%7))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM archival WHERE id % 5 = 0`); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		if err := d.TextVocabulary(ctx, tx, "fts_archival", func(term string, n int64) error { got[term] = n; return nil }); err != nil {
			tx.Rollback()
			t.Fatal(err)
		}
		if len(got) < 30 {
			tx.Rollback()
			t.Fatalf("%d terms: %v", len(got), got)
		}
		for term, n := range got {
			want, err := d.TextDocFreq(ctx, tx, "fts_archival", term)
			if err != nil || n != want {
				tx.Rollback()
				t.Fatalf("term %q: %d rows listed, TextDocFreq %d, %v", term, n, want, err)
			}
		}
		tx.Rollback()
	}
	if err := d.TextVocabulary(ctx, db, "archival", func(string, int64) error { return nil }); err == nil {
		t.Fatal("TextVocabulary of a table that is not an FTS5 index: no error")
	}
}
