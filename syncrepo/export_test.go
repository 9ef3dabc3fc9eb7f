package syncrepo

import (
	"context"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// Hooks replace how a test's Session reads a block and merges into it, so
// a test can serve a stale document, act between a read-access check and
// its reply, or fail a write the way a database does. A nil field keeps
// the handle's method.
type Hooks = struct {
	Doc   func(ctx context.Context, b *memory.Block) (*blocks.Document, error)
	Merge func(ctx context.Context, b *memory.Block, data []byte) error
}

// ServeHooked is Serve with h in place of the block handles' Doc and
// Merge.
func ServeHooked(ctx context.Context, conn Conn, a Agent, opts *Options, h Hooks) error {
	return serve(ctx, conn, a, opts, h)
}
