package postgres_test

import (
	"os"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
)

// TestMain runs the package's PostgreSQL tests on one cluster.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
