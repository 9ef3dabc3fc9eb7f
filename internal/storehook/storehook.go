// Package storehook is how package memory hands internal/storeaccess what
// a memory.Store keeps from its users (the driver.Backend it persists to,
// the searchindex.Index it maintains, and the store's write path, clock and
// open check for rows kept beside its own) without a method on the
// store's surface. Package memory sets the functions from its init
// function; nothing else sets them, and only internal/storeaccess calls
// them.
package storehook

import (
	"context"
	"database/sql"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
)

// Tables is what a package keeping tables of its own in a store's
// database (internal/accesstoken: engram serve's access tokens and login
// links) needs of the store, so that its rows are read and written the
// way the store's own are.
type Tables struct {
	// DB is the store's read pool. Statements use "?" placeholders on
	// every engine.
	DB *sql.DB
	// Write runs fn in one of the store's write transactions, taking no
	// block or agent lock (driver.Backend.Write, or the backend's
	// driver.LockingWriter with none), committing when fn returns nil. fn
	// runs at most once; its ctx is not cancelled once it runs.
	Write func(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error
	// Now is the store's clock (memory.Options.Now).
	Now func() time.Time
	// Check returns ctx's error, or memory.ErrClosed once the store is
	// closed.
	Check func(ctx context.Context) error
}

// Backend, Index and TablesOf return a *memory.Store's backend, search
// index and Tables.
var (
	Backend  func(store any) driver.Backend
	Index    func(store any) *searchindex.Index
	TablesOf func(store any) Tables
)
