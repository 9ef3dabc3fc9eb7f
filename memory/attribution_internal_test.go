package memory

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
)

// BenchmarkMergedRecord is what attribution adds, alone: recording 1 or
// 100 merged changes in a write transaction, and reading back a block's
// 1,000 records and applying them to a history of 1,000 changes
// (BlockHistory's and Document.History's extra work).
func BenchmarkMergedRecord(b *testing.B) {
	ctx := context.Background()
	for name, target := range map[string]func(b *testing.B) string{
		"sqlite":   func(b *testing.B) string { return filepath.Join(b.TempDir(), "m.db") },
		"postgres": func(b *testing.B) string { return pgtest.Start(b).NewDatabase(b) },
	} {
		b.Run(name, func(b *testing.B) {
			c, err := Open(ctx, target(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if _, err := c.createBlock(ctx, "ada", BlockSpec{Label: "notes"}); err != nil {
				b.Fatal(err)
			}
			var id int64
			if err := c.rdb.QueryRowContext(ctx, `SELECT id FROM blocks WHERE owner = 'ada' AND label = 'notes'`).Scan(&id); err != nil {
				b.Fatal(err)
			}
			hashes := func(from, n int) []string {
				out := make([]string, n)
				for i := range out {
					out[i] = fmt.Sprintf("%064x", from+i)
				}
				return out
			}
			next := 0
			b.Run("empty-write", func(b *testing.B) { // the transaction alone, for comparison
				for range b.N {
					if err := c.write(ctx, nil, func(ctx context.Context, tx *sql.Tx) error { return nil }); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, n := range []int{1, 100} {
				b.Run(fmt.Sprintf("record=%d", n), func(b *testing.B) {
					for range b.N {
						hs := hashes(next, n)
						next += n
						err := c.write(ctx, nil, func(ctx context.Context, tx *sql.Tx) error {
							return insertMerged(ctx, tx, id, hs, func(string) string { return "ada" })
						})
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			// Another block's 1,000 records, beside the records above
			// (another block's), read back.
			if _, err := c.createBlock(ctx, "ada", BlockSpec{Label: "other"}); err != nil {
				b.Fatal(err)
			}
			if err := c.rdb.QueryRowContext(ctx, `SELECT id FROM blocks WHERE owner = 'ada' AND label = 'other'`).Scan(&id); err != nil {
				b.Fatal(err)
			}
			all := hashes(0, 1000)
			if err := c.write(ctx, nil, func(ctx context.Context, tx *sql.Tx) error {
				return insertMerged(ctx, tx, id, all, func(string) string { return "ada" })
			}); err != nil {
				b.Fatal(err)
			}
			hist := make([]blocks.Change, len(all))
			b.Run("read=1000", func(b *testing.B) {
				for range b.N {
					for i, h := range all {
						hist[i] = blocks.Change{Hash: h, Actor: "unknown"}
					}
					by, err := c.mergedBy(ctx, id)
					if err != nil || len(by) != 1000 {
						b.Fatal(len(by), err)
					}
					blocks.Attribute(hist, by)
				}
			})
		})
	}
}
