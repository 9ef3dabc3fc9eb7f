package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory/sqlite"
)

// TestForeignKeysIndexed: the columns of every foreign key lead an index
// of their table (or are its rowid), so deleting a referenced row finds
// the rows naming it by an index, not by reading their whole table inside
// the write transaction (an archival delete once read every agent's
// entries to clear superseded_by).
func TestForeignKeysIndexed(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "fk.db"))
	if _, _, err := sqlite.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	column := func(q string, args ...any) []string {
		t.Helper()
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	keys := 0
	for _, table := range column(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'`) {
		fks := map[string][]string{} // by constraint id, columns in order
		rows, err := db.QueryContext(ctx, `SELECT id, "from" FROM pragma_foreign_key_list(?) ORDER BY id, seq`, table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, col string
			if err := rows.Scan(&id, &col); err != nil {
				t.Fatal(err)
			}
			fks[id] = append(fks[id], col)
		}
		rows.Close()
		if len(fks) == 0 {
			continue
		}
		// The rowid: an INTEGER PRIMARY KEY of one column.
		var rowid string
		if pk := column(`SELECT name FROM pragma_table_info(?) WHERE pk > 0 AND upper(type) = 'INTEGER'`, table); len(pk) == 1 &&
			len(column(`SELECT name FROM pragma_table_info(?) WHERE pk > 0`, table)) == 1 {
			rowid = pk[0]
		}
		var leads [][]string // each index's columns, in order
		for _, ix := range column(`SELECT name FROM pragma_index_list(?)`, table) {
			leads = append(leads, column(`SELECT COALESCE(name, '') FROM pragma_index_info(?) ORDER BY seqno`, ix))
		}
		for _, cols := range fks {
			keys++
			if len(cols) == 1 && cols[0] == rowid {
				continue
			}
			if !slices.ContainsFunc(leads, func(ix []string) bool {
				return len(ix) >= len(cols) && sameSet(ix[:len(cols)], cols)
			}) {
				t.Errorf("%s (%s): no index leads with the foreign key's columns", table, strings.Join(cols, ", "))
			}
		}
	}
	if keys < 10 {
		t.Fatalf("found %d foreign keys: the schema was not read", keys)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
