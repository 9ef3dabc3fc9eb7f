package postgres

import (
	"context"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/memory"
)

// init registers the backend with package memory, so that memory.Open
// takes postgres:// and postgresql:// URLs and libpq keyword strings
// ("host=db dbname=engram") in any program that imports this package,
// blank or not.
func init() {
	memory.Register("postgres", driver.Driver{
		Schemes:    []string{"postgres", "postgresql"},
		KeywordDSN: true,
		Open:       openDriver,
	})
}

func openDriver(ctx context.Context, target string, o *driver.OpenOptions) (driver.Backend, error) {
	b, err := Open(ctx, target, &Options{LockTimeout: o.LockTimeout, Logger: o.Logger})
	if err != nil {
		return nil, err // not a nil *Backend in a non-nil interface
	}
	return b, nil
}

var (
	_ driver.Backend       = (*Backend)(nil)
	_ driver.BlockNotifier = (*Backend)(nil)
	_ driver.LockingWriter = (*Backend)(nil)
	_ driver.OneTripWriter = (*Backend)(nil)
)
