package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/driver/drivertest"
	"github.com/engram-go/engram/memory/sqlite"
)

func TestBackendConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Engine{
		NewDatabase: func(t *testing.T) string { return filepath.Join(t.TempDir(), "backend.db") },
		Open: func(t *testing.T, path string) (driver.Backend, error) {
			b, err := sqlite.Open(context.Background(), path, &sqlite.Options{BusyTimeout: 10 * time.Second})
			if err != nil {
				return nil, err
			}
			return b, nil
		},
	})
}
