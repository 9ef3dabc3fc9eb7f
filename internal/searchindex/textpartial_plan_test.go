package searchindex_test

import (
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
)

// A partition load reads an owner's archival entries in conversation
// order from the index that holds that order (agent, conversation_key,
// place, id), without sorting them.
func TestTextCachePartialOwnQueryPlan(t *testing.T) {
	db := openDB(t)
	q := searchindex.ArchivalOwnQuery(sqlite.SearchDialect{})
	if q == "" {
		t.Fatal("SQLite reads archival partitions through archival_links")
	}
	rows, err := db.Query(`EXPLAIN QUERY PLAN `+q, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(plan, "; ")
	if !strings.Contains(joined, "SEARCH a USING INDEX archival_conversation (agent=?)") || strings.Contains(joined, "TEMP B-TREE") {
		t.Fatalf("plan %q: not the owner's entries in archival_conversation's order", joined)
	}
}
