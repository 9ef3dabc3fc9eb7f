package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/driver/drivertest"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory/postgres"
)

func TestBackendConformance(t *testing.T) {
	srv := pgtest.Start(t)
	drivertest.Run(t, drivertest.Engine{
		NewDatabase: func(t *testing.T) string { return srv.NewDatabase(t) },
		Open: func(t *testing.T, dsn string) (driver.Backend, error) {
			b, err := postgres.Open(context.Background(), dsn, &postgres.Options{LockTimeout: 10 * time.Second})
			if err != nil {
				return nil, err
			}
			return b, nil
		},
	})
}
