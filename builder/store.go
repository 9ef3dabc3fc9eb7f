package builder

import (
	"context"

	"github.com/engram-go/engram/memory"
)

// Agent is the memory a Builder reads: the agent's handle
// (store.Agent("entropy"), a *memory.Agent), or anything with the same
// methods. It is defined here, where it is consumed, as the part of
// *memory.Agent a build uses, so that a wrapper (one that counts or
// delays reads, say) need not implement more.
//
//   - ID names the agent in the cache keys, errors and Metadata.
//   - BlocksStamp, Blocks and SharedBlocks give the blocks of the system
//     prompt; the stamp is read first and keeps cached listings honest
//     (see Cache).
//   - Messages keeps the summaries ContextConfig.Compression writes and
//     reuses (compress.SummaryStore).
//   - Archival is what StoreRecaller searches for ContextConfig.Recall.
//
// Two capabilities are optional and documented where they are declared:
// LibraryStore (ContextConfig.Library and Promote) and ProfileStore (the
// agent's profile); *memory.Agent has both. New looks for them on the
// agent once, and only there.
type Agent interface {
	ID() string
	BlocksStamp(ctx context.Context) (memory.BlocksStamp, error)
	Blocks(ctx context.Context) ([]memory.BlockMeta, error)
	SharedBlocks(ctx context.Context) ([]memory.SharedBlock, error)
	Messages() *memory.Messages
	Archival() *memory.Archival
}

// A changed signature in memory must fail the build here, not in a caller.
var (
	_ Agent = (*memory.Agent)(nil)
	// The optional parts: *memory.Agent must keep them, or the features
	// would turn off (the library with an error, the profile silently).
	_ LibraryStore  = (*memory.Agent)(nil)
	_ ProfileStore  = (*memory.Agent)(nil)
	_ CountStore    = (*memory.Store)(nil)
	_ MessageSource = (*memory.Messages)(nil)
)

// ProfileStore gives the agent's profile (memory.Profile): the system
// prompt, tool definitions, tool rules and model a build uses for what
// its caller does not set (see Builder.WithProfile). Profile returns an
// error wrapping memory.ErrNotFound for an agent without one. An Agent
// that lacks it builds without profiles. When the store caches listings
// under BlocksStamp (as memory's does), the stamp must change when a
// profile does: the profile is read again only then.
type ProfileStore interface {
	Profile(ctx context.Context) (memory.Profile, error)
}

// optional is what New finds on its agent beyond Agent: the only type
// assertions on the agent in this package. Any may be nil.
type optional struct {
	library LibraryStore
	profile ProfileStore
}

func optionalParts(a Agent) optional {
	var o optional
	o.library, _ = a.(LibraryStore)
	o.profile, _ = a.(ProfileStore)
	return o
}
