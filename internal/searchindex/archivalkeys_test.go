package searchindex_test

import (
	"context"
	"testing"
)

// archivalKeyCases are metadata values that read alike, with whether
// each engine takes them for one conversation (docs/retrieval.md, "Which
// values are the same conversation"): SQLite keeps a value's JSON text as
// written; PostgreSQL keeps jsonb's text, which writes numbers without an
// exponent (1e2 is 100, -0 is 0; 3.0 keeps its scale) and strings without
// escapes ("\u0033" is "3").
var archivalKeyCases = []struct {
	a, b             string
	sqlite, postgres bool
}{
	{`3`, `"3"`, false, false},
	{`3`, `3.0`, false, false},
	{`1e2`, `100`, false, true},
	{`1E2`, `1e2`, false, true},
	{`-0`, `0`, false, true},
	{`"\u0033"`, `"3"`, false, true},
	{`"a\/b"`, `"a/b"`, false, true},
	{`"3"`, `"3"`, true, true},
}

func TestArchivalConversationKeysSQLite(t *testing.T) {
	db := openDB(t)
	for _, c := range archivalKeyCases {
		var same bool
		if err := db.QueryRow(`SELECT (? -> '$.s') = (? -> '$.s')`, `{"s": `+c.a+`}`, `{"s": `+c.b+`}`).Scan(&same); err != nil {
			t.Fatal(err)
		}
		// The column archival_links compares.
		ida := insertArchival(t, db, archivalRow{Agent: "k", Content: "x", Metadata: `{"session": ` + c.a + `}`})
		idb := insertArchival(t, db, archivalRow{Agent: "k", Content: "x", Metadata: `{"session": ` + c.b + `}`})
		var col bool
		if err := db.QueryRow(`SELECT (SELECT conversation_key FROM archival WHERE id = ?) = (SELECT conversation_key FROM archival WHERE id = ?)`, ida, idb).Scan(&col); err != nil {
			t.Fatal(err)
		}
		if same != c.sqlite || col != c.sqlite {
			t.Errorf("SQLite: %s and %s one conversation: %v (column %v), want %v", c.a, c.b, same, col, c.sqlite)
		}
	}
}

func TestArchivalConversationKeysPostgres(t *testing.T) {
	_, b := openPGStore(t)
	for _, c := range archivalKeyCases {
		var same bool
		if err := b.DB().QueryRowContext(context.Background(), `SELECT engram_archival_conversation($1) = engram_archival_conversation($2)`,
			`{"session": `+c.a+`}`, `{"session": `+c.b+`}`).Scan(&same); err != nil {
			t.Fatal(err)
		}
		if same != c.postgres {
			t.Errorf("PostgreSQL: %s and %s one conversation: %v, want %v", c.a, c.b, same, c.postgres)
		}
	}
}
