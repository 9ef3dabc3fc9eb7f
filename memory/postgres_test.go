package memory_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// The reliability tests on PostgreSQL: each starts a throwaway cluster (see
// internal/pgtest) and runs the same scenario as on a SQLite file, with
// child processes connecting to the same database.

func TestPostgresProcessesOneBlock(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	srv := pgtest.Start(t)
	runProcessesOneBlock(t, srv.NewDatabase(t), t.TempDir(), 3, 1600/procScale(), false)
}

func TestPostgresProcessesAcrossEpochs(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	srv := pgtest.Start(t)
	runProcessesOneBlock(t, srv.NewDatabase(t), t.TempDir(), 3, 1200/procScale(), true)
}

func TestPostgresKillDuringWrites(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	srv := pgtest.Start(t)
	runKillDuringWrites(t, srv.NewDatabase(t), 10)
}

func TestPostgresProcessesRespectLimits(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	srv := pgtest.Start(t)
	runProcessesRespectLimits(t, srv.NewDatabase(t))
}

func TestFirstEmbedderEmbedsExistingContentPostgres(t *testing.T) {
	runFirstEmbedder(t, pgtest.Start(t).NewDatabase(t))
}

// BenchmarkPostgresAppendToBlock is BenchmarkAppendToBlock's engram side on
// a throwaway PostgreSQL cluster over a unix socket, next to a bare INSERT
// of the same bytes on the same server.
func BenchmarkPostgresAppendToBlock(b *testing.B) {
	ctx := context.Background()
	srv := pgtest.Start(b)
	b.Run("engram", func(b *testing.B) {
		c, err := memory.Open(ctx, fresh(srv.NewDatabase(b)), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		benchAppends(b, c)
	})
	b.Run("bare-postgres-insert", func(b *testing.B) {
		db, err := sql.Open("pgx", srv.NewDatabase(b))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`CREATE TABLE u (block_id BIGINT, seq BIGINT, data BYTEA, PRIMARY KEY (block_id, seq))`); err != nil {
			b.Fatal(err)
		}
		data := make([]byte, 120)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := db.Exec(`INSERT INTO u VALUES (1, $1, $2)`, i, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
