package tools

import (
	"context"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// Store is the memory a Toolset acts on: the part of memory.Store its tools
// call, defined here where it is consumed so that a test fake or another
// store implements ten methods rather than all of memory.Store. Every
// method is called as the Toolset's agent, so the store's permission,
// share, limit and schema checks are the only ones there are. memory.Store
// and *memory.Cache implement it; no tool asserts the store to anything
// else.
type Store interface {
	// Reading blocks (core_memory_view, error hints).
	GetBlock(ctx context.Context, agent, label string) (*blocks.Document, error)
	GetSharedBlock(ctx context.Context, requester, owner, label string) (*blocks.Document, error)
	RenderedContent(ctx context.Context, agent, label string) (string, error)
	ListBlocks(ctx context.Context, agent string) ([]memory.BlockMeta, error)
	ListSharedBlocks(ctx context.Context, agent string) ([]memory.SharedBlock, error)

	// Writing blocks: directly, or as a proposal for Partner/Human blocks.
	ApplyEdit(ctx context.Context, agent, owner, label string, e memory.Edit) error
	ProposeEdit(ctx context.Context, agent, owner, label string, e memory.Edit, reason string) (memory.Proposal, error)

	// Archival memory and search.
	InsertArchival(ctx context.Context, agent string, e memory.ArchivalEntry) (memory.ArchivalEntry, error)
	SearchArchival(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error)
	Search(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error)
}

// A changed signature in memory must fail the build here, not in a caller.
var (
	_ Store = memory.Store(nil)
	_ Store = (*memory.Cache)(nil)
)
