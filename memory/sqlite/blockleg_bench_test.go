package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// BenchmarkBlocksLeg: one agent's blocks leg in SQL (text cache off) in a
// store of N agents of 20 blocks each (the bench agents section's Zipf
// text), each agent with 2 blocks of another agent shared with it. The
// leg should cost what the agent's own and shared blocks cost
// (docs/performance.md, "the blocks leg by owner and shares").
//
//	go test -run '^$' -bench BlocksLeg -benchtime 300x ./memory/sqlite
func BenchmarkBlocksLeg(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprint("N=", n), func(b *testing.B) {
			be, err := Open(ctx, filepath.Join(b.TempDir(), "ab.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			r := rand.New(rand.NewPCG(35, uint64(n)))
			vocab := make([]string, 5000)
			for i := range vocab {
				vocab[i] = fmt.Sprintf("w%sx%d", strings.Repeat("q", i%3), i)
			}
			zipf := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
			text := func() string {
				w := make([]string, 12+r.IntN(30))
				for i := range w {
					w[i] = vocab[zipf.Uint64()]
				}
				return strings.Join(w, " ")
			}
			err = be.Write(ctx, func(tx *sql.Tx) error {
				for a := range n {
					for i := range 20 {
						if _, err := tx.ExecContext(ctx, `INSERT INTO blocks (owner, label, description, block_type, permission, schema_json, char_limit, rendered, created_at, updated_at)
							VALUES (?, ?, '', 'working', 'ReadWrite', '{}', 5000, ?, 0, 0)`, fmt.Sprint("agent-", a), fmt.Sprint("block-", i), text()); err != nil {
							return err
						}
					}
				}
				// Each agent has 2 blocks of the next agent shared with it.
				_, err := tx.ExecContext(ctx, `INSERT INTO shares (block_id, agent, permission, created_at)
					SELECT id, 'agent-' || ((CAST(substr(owner, 7) AS INTEGER) + ?) % ?), 'ReadOnly', 0 FROM blocks WHERE label IN ('block-0', 'block-1')`, n-1, n)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			x, err := searchindex.NewIndex(ctx, be.DB(), be.SearchDialect(), nil, &searchindex.IndexOptions{Write: be.Write, TextCacheBytes: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
			var qs []string
			for i := range 60 {
				qs = append(qs, vocab[i%15]+" "+vocab[50+r.IntN(2000)])
			}
			opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Blocks).Limit(10)
			if _, err := x.Search(ctx, qs[0], search.Scope{Agent: "agent-0"}, opts); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := x.Search(ctx, qs[i%len(qs)], search.Scope{Agent: fmt.Sprint("agent-", (i*7919)%n)}, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
