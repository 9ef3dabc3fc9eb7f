package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/engram-go/engram/memory/sqlite"
)

// The reader pool keeps every connection it opens. A connection is a file
// opened with its pragmas, and the statements prepared on it (the search
// caches' and the store's) are prepared again on a new one; with
// database/sql's default of two idle connections, reads three or four at
// a time (a search beside a background save and a statistics pass) closed
// the ones let go beyond two and opened others on the next burst.
func TestReaderPoolKeepsItsConnections(t *testing.T) {
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "pool.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	db := b.DB()
	burst := func() {
		// Every connection the pool may open, held at once, then let go.
		n := db.Stats().MaxOpenConnections
		var held, release sync.WaitGroup
		held.Add(n)
		release.Add(1)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Error(err)
					held.Done()
					return
				}
				defer conn.Close()
				var one int
				if err := conn.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
					t.Error(err)
				}
				held.Done()
				release.Wait()
			}()
		}
		held.Wait()
		release.Done()
		wg.Wait()
	}
	for range 3 {
		burst()
	}
	st := db.Stats()
	if st.MaxIdleClosed != 0 || st.OpenConnections != st.MaxOpenConnections {
		t.Errorf("after three bursts of %d readers: %d connections closed as idle beyond the pool's keep, %d open; want 0 and %d",
			st.MaxOpenConnections, st.MaxIdleClosed, st.OpenConnections, st.MaxOpenConnections)
	}
}
