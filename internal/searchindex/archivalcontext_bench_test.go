package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
)

// BenchmarkTextCacheBuildArchival builds the text cache of 20,000
// archival entries of one agent (with each entry's context from its
// neighbours), with and without entries naming a session, reading them
// owner by owner (as a build does) and with the store-wide query.
func BenchmarkTextCacheBuildArchival(b *testing.B) {
	for _, withSession := range []bool{false, true} {
		b.Run(fmt.Sprintf("session=%v", withSession), func(b *testing.B) {
			db := openDB(b)
			tx, err := db.Begin()
			if err != nil {
				b.Fatal(err)
			}
			for i := range 20000 {
				meta := `{"source": "chat"}`
				if withSession {
					meta = fmt.Sprintf(`{"source": "chat", "session": "s%d"}`, i/20)
				}
				insertArchival(b, tx, archivalRow{Agent: "a", Metadata: meta,
					Content: fmt.Sprintf("note %d: we talked about the garden, the bees and the weather on the hill", i)})
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			// by-owner: as a build reads (each owner's entries, their
			// neighbours found in Go); store-wide: every entry with the
			// query that joins its neighbours in the engine.
			for _, bySel := range []bool{false, true} {
				b.Run(map[bool]string{false: "by-owner", true: "store-wide"}[bySel], func(b *testing.B) {
					for range b.N {
						buildWhole(b, db, sqlite.SearchDialect{}, nil, bySel)
					}
				})
			}
		})
	}
}

// buildWhole builds a whole text cache over db (bySel: reading every row
// with the store-wide query) and closes it.
func buildWhole(b *testing.B, db *sql.DB, d driver.Dialect, o *searchindex.IndexOptions, bySel bool) {
	ctx := context.Background()
	x, err := searchindex.NewIndex(ctx, db, d, nil, o)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	if bySel {
		searchindex.SetTextReadBySel(x)
	}
	if err := x.WarmTextCache(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkArchivalInsertPrepare parses a one-row archival INSERT: what
// an unprepared insert pays before it runs, most of it compiling the
// triggers the INSERT fires.
func BenchmarkArchivalInsertPrepare(b *testing.B) {
	db := openDB(b)
	for range b.N {
		st, err := db.Prepare(`INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`)
		if err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
}
