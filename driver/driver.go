package driver

import (
	"context"
	"log/slog"
	"time"
)

// Driver tells memory.Open how to reach a backend other than the built-in SQLite.
// A backend package registers its Driver from its init function with
// memory.Register, as a database/sql driver does; a program then reaches that
// backend with a blank import, and a program without the import does not
// link it:
//
//	import _ "github.com/engram-go/engram/memory/postgres"
//
//	store, err := memory.Open(ctx, "postgres://db.internal/engram", nil)
type Driver struct {
	// Schemes are the URL schemes (the part before "://", matched in any
	// case) whose targets the backend opens, e.g. "postgres".
	Schemes []string
	// KeywordDSN claims libpq keyword/value connection strings ("host=db
	// dbname=engram"), which memory.Open recognises by a connection keyword and
	// '=' at the start.
	KeywordDSN bool
	// Open opens the backend for target, given as the caller wrote it.
	// Its errors must not show a password the target holds.
	Open func(ctx context.Context, target string, opts *OpenOptions) (Backend, error)
}

// OpenOptions are the options a Driver's Open receives.
type OpenOptions struct {
	// LockTimeout is how long a write waits for a lock: the write lock,
	// or on an engine whose writers run in parallel each lock it takes
	// (memory.Options.BusyTimeout).
	LockTimeout time.Duration
	// Logger receives the backend's logs (memory.Options.Logger); never nil.
	Logger *slog.Logger
}
