package postgres_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// Migration 0001 had two earlier versions that were released (6dff819,
// then 96fc4ce; the file as released.txt holds the current one since
// f23770c): testdata/core-*.sql are those two versions. A database
// that one of them made is at version 1 like any other, but had a
// generated fts column and no fts_blocks_dirty, vec tables keyed "id", no
// search_reembed, and triggers that never mark a block for the lazy index:
// migrated by this build, it failed every search ("relation
// fts_blocks_dirty does not exist"). It opens, reads back, and finds a
// block's words after an edit.
func TestOpensDatabaseOfAnEarlyCore(t *testing.T) {
	srv := pgtest.Start(t)
	for _, file := range []string{"testdata/core-6dff819.sql", "testdata/core-96fc4ce.sql"} {
		t.Run(file, func(t *testing.T) {
			ctx := context.Background()
			core, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dsn := srv.NewDatabase(t)
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, q := range []string{string(core), `CREATE TABLE engram_schema (version BIGINT NOT NULL)`, `INSERT INTO engram_schema VALUES (1)`} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			s, err := memory.Open(ctx, dsn, &memory.Options{Embedder: search.NewOffline(16)})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "alpha", Permission: blocks.Admin}); err != nil {
				t.Fatal(err)
			}
			find := func(word string) {
				t.Helper()
				rs, err := s.Agent("ada").Search(ctx, word, search.NewOptions().Mode(search.FTS))
				if err != nil {
					t.Fatalf("search %q: %v", word, err)
				}
				if len(rs) != 1 {
					t.Fatalf("search %q: %d results, want the block", word, len(rs))
				}
			}
			find("alpha")
			if err := s.Agent("ada").Block("notes").Append(ctx, " zebra"); err != nil {
				t.Fatal(err)
			}
			find("zebra")
			if _, err := s.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: "quokka"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Agent("ada").Block("notes").Delete(ctx); err != nil {
				t.Fatal(err)
			}
			find("quokka")
		})
	}
}
