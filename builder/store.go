package builder

import (
	"context"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

// Store is the memory a Builder reads: the part of memory.Store it uses,
// defined here where it is consumed so that a test fake or another store
// implements six methods rather than all of memory.Store. memory.Store and
// *memory.Cache implement it.
//
//   - BlocksStamp, ListBlocks and ListSharedBlocks give the blocks of the
//     system prompt; the stamp is read first and keeps cached listings
//     honest (see Cache).
//   - SaveSummary and LatestSummary (compress.SummaryStore) keep the
//     summaries ContextConfig.Compression writes and reuses.
//   - SearchArchival (ArchivalSearcher) is the recall of ContextConfig.Recall
//     when its Recaller is nil.
//
// The last three are needed only by the features that use them; they are
// part of Store, not found by type assertion, because memory.Store has them
// and a feature should not turn off silently when a wrapper hides a method.
//
// Three capabilities memory.Store lacks are optional and documented where
// they are declared: LibraryStore (ContextConfig.Library and Promote),
// CountStore (persisted token counts) and ProfileStore (the agent's
// profile). New looks for them on the store once, and only there.
type Store interface {
	BlocksStamp(ctx context.Context, agent string) (memory.BlocksStamp, error)
	ListBlocks(ctx context.Context, agent string) ([]memory.BlockMeta, error)
	ListSharedBlocks(ctx context.Context, agent string) ([]memory.SharedBlock, error)
	compress.SummaryStore
	ArchivalSearcher
}

// A changed signature in memory must fail the build here, not in a caller.
var (
	_ Store = memory.Store(nil)
	_ Store = (*memory.Cache)(nil)
	// The optional parts: *memory.Cache must keep them, or the features
	// would turn off (the library with an error, counts silently).
	_ CountStore   = (*memory.Cache)(nil)
	_ LibraryStore = (*memory.Cache)(nil)
	_ ProfileStore = (*memory.Cache)(nil)
)

// ProfileStore gives an agent's profile (memory.Profile): the system
// prompt, tool definitions, tool rules and model a build uses for what its
// caller does not set (see Builder.WithProfile). Profile returns an error
// wrapping memory.ErrNotFound for an agent without one. A store that lacks
// it builds without profiles. When the store caches listings under
// BlocksStamp (as *memory.Cache does), the stamp must change when a
// profile does: the profile is read again only then.
type ProfileStore interface {
	Profile(ctx context.Context, agent string) (memory.Profile, error)
}

// optional is what New finds on its store beyond Store: the only type
// assertions on the store in this package. Any may be nil.
type optional struct {
	library LibraryStore
	counts  CountStore
	profile ProfileStore
}

func optionalParts(s Store) optional {
	var o optional
	o.library, _ = s.(LibraryStore)
	o.counts, _ = s.(CountStore)
	o.profile, _ = s.(ProfileStore)
	return o
}
