package search_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/engram-go/engram/internal/testenv"
)

// sized returns long when the long tests run (ENGRAM_LONG_TESTS=1, as CI
// sets it) and short otherwise: the randomized, churn and load tests run
// the same operations at a smaller size by default, so that go test and
// go test -race of the package stay within their default timeout.
func sized(long, short int) int {
	if testenv.Long() {
		return long
	}
	return short
}

// inTx runs fill in one transaction on db and commits it: a test's rows
// written at once, not one commit each.
func inTx(tb testing.TB, db *sql.DB, fill func(tx execer)) {
	tb.Helper()
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	fill(tx)
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}
