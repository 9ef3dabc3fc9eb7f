package workspace

import (
	"context"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// Store is the memory Import and Export use: the four methods of
// memory.Store they call, so a test fake or another store implements four
// methods, not all of memory.Store.
type Store interface {
	CreateBlock(ctx context.Context, agent string, spec memory.BlockSpec) (*blocks.Document, error)
	GetBlock(ctx context.Context, agent, label string) (*blocks.Document, error)
	ListBlocks(ctx context.Context, agent string) ([]memory.BlockMeta, error)
	PersistBlock(ctx context.Context, agent, label string) error
}

// A changed signature in memory must fail the build here, not in a caller.
var (
	_ Store = memory.Store(nil)
	_ Store = (*memory.Cache)(nil)
)
