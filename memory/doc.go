// Package memory is engram's store: blocks (automerge CRDT documents),
// shares between agents, proposals for Partner/Human blocks, archival
// memories, messages with batches and summaries, and search over all of it.
//
// [Open] returns the store, a [Store]:
//
//	store, err := memory.Open(ctx, "agents.db", &memory.Options{CacheSize: 256})
//
// (nil Options means the defaults; ":memory:" gives a throw-away store).
//
// The store's own methods are store-wide (Close, Import, Export, Reembed,
// [Store.Admin], …). Everything an agent does goes through
// its handle: store.Agent(id) returns an [Agent], whose [Agent.Block] and
// [Agent.Shared] return [Block] handles and whose [Agent.Archival] and
// [Agent.Messages] are its archival memory and conversation. A handle fixes
// the acting agent, owner and label once, so no call takes them as strings
// that could be swapped.
//
// # Backends
//
// Open picks a [driver.Backend] from its target: a file path, ":memory:" or
// sqlite://PATH is the embedded SQLite backend (package memory/sqlite; a new
// file is created 0600); a postgres:// URL or a libpq keyword string
// starting with a connection keyword ("host=… dbname=…") is PostgreSQL
// (package memory/postgres), which processes on many machines share.
// SQLite is built in; PostgreSQL, like a database/sql driver, registers
// itself when imported (see [Register]), so only programs that import it
// link pgx:
//
//	import _ "github.com/engram-go/engram/memory/postgres"
//
// What an engine implements (driver.Backend, driver.Driver) is package
// driver's, which a program using engram never imports.
//
// Targets in errors and logs are redacted (no password, no query or
// keyword value but harmless ones). [New] builds a Store over a backend opened by the
// caller. Everything below holds on both; where the mechanism differs
// (how other processes' changes are noticed), the text says so.
//
// # How a Store keeps documents
//
// A block's document is loaded from the backend on first use (lazy load) and kept
// in an LRU of at most Options.CacheSize documents that together are
// estimated to take at most Options.CacheBytes of memory ([DocumentBytes]:
// a document holds about 500 bytes per character of its text). The
// store manages every document it hands out ([blocks.Document.Manage]): each
// mutation, through a handle method or directly on a view from
// [Block.Doc], runs inside one write transaction (holding the backend's
// write lock on SQLite, the block's lock on PostgreSQL, where writes to
// different blocks run in parallel) that first applies
// what other writers persisted, then validates the edit against that fresh
// state with the accessor's current permission (so limits hold across
// processes, and a revoked share binds views taken before it), and stores
// only this process's new changes as one row of incremental automerge bytes
// beside the block's rendered text and heads. The call returns once that
// transaction commits. If it fails, the call returns an error wrapping
// [ErrPersist] and the edit is rolled back; while it runs, readers of the
// block see the state before it, so no read ever sees a change that is not
// durable. With Options.WriteBack, changes are kept until
// [Block.Persist], Flush, Close or eviction; eviction flushes first and nothing
// is lost. Update rows and snapshots carry checksums: a torn or corrupt row
// is [ErrCorrupt] naming the block, never skipped.
//
// Automerge changes made elsewhere (automerge JS, a fork) enter a block
// only through [Block.Merge], validated and persisted like any write.
// The block's history names the agent that merged them (with op merge),
// never what their commit messages claim: the store records who merged
// which change, in the merge's transaction, for every process and across
// compactions, epochs and Export/Import.
//
// Past Options.CompactAfter updates (more for a large block), a block's
// updates are folded into its snapshot in the writing transaction. A block
// whose history outgrows its content (Options.HistoryLimit) is then rebased
// onto a fresh document holding only its value, a new epoch: the old
// history is archived ([Block.History] and [Block.At] still read
// it), every replica switches in place, and changes made on an older
// epoch are never merged into the new document. Log blocks whose schema
// sets a Retention move older entries into archival memory as part of
// each append, in its transaction (past the retention, or to make room
// under the character limit); their vectors are computed afterwards.
//
// # Several processes, one database
//
// On PostgreSQL, committed block changes are pushed to every Store through
// LISTEN/NOTIFY ([driver.BlockNotifier]); a cache hit then needs no query at all,
// and while the listening connection is down every hit takes the SQLite
// path below.
//
// SQLite runs in WAL mode. Before serving a cached block a Store reads the
// block's sequence number (one indexed row; the only SQL on a cache hit)
// and applies the updates other processes wrote since. Writers take the
// write lock with short, jittered retries rather than SQLite's coarse busy
// sleeps, so several processes appending to one block interleave fairly and
// none loses an update (see TestTwoProcessesOneBlock and
// TestKillDuringWrites).
//
// [Agent.BlocksStamp] is a cheap fingerprint (one indexed query) of the
// blocks an agent sees, own and shared, that any persisted change by any
// process alters; the context builder caches block listings under it.
//
// # Storage caps and quotas
//
// Every archival entry and message is held to per-entry caps, in bytes as
// stored (Options.MaxArchivalBytes and the fields after it; the defaults
// are 1 MiB of content, 64 KiB of metadata JSON, 64 distinct tags of at
// most 256 bytes each, and 1 MiB per message; negative turns a cap off).
// A write past one fails with [ErrTooLarge], naming the agent, the field,
// its size and the cap, and stores nothing; the sizes are checked before
// the work that grows with the entry (the scan of its strings, embedding,
// the transaction). The caps hold on every way in: [Archival.Insert],
// [Archival.InsertBatch], [Archival.Supersede], [Messages.Append],
// [Messages.AppendMany] and [Store.Import].
//
// Options.AgentQuotaBytes, off by default, bounds what each agent's
// archival entries and messages hold together (content, metadata and tags
// or tool calls, and [UsageRowBytes] per row). The database keeps each
// agent's count in a row (table agent_usage) that triggers update in the
// writing transaction; a write reads it under the store's write lock, so
// writers in any number of processes cannot together pass the quota. A
// write past it fails with [ErrQuota] and stores nothing;
// [Agent.StorageUsed] reads the count. Deleting an archival entry gives
// its bytes back; a superseded entry is kept as history and counts until
// deleted.
//
// # Duplicates and consolidation
//
// An archival entry is stored once: an insert whose content, normalised
// ([NormalizeContent]), and conversation (as [ArchivalEntry.Metadata]
// names it) equal a live entry's of the same agent returns that entry
// with Duplicate set, its tags merged in (union) and the metadata keys it
// lacked added (its own keep their values). A unique index on the live
// entries' keys holds this across processes; Options.KeepDuplicates turns
// it off. [Archival.Consolidate] finds near-duplicates and proposes merges
// (op [OpMergeArchival], decided with [Agent.ApproveProposal] and
// [Agent.RejectProposal]), or applies exact ones at once;
// [Store.RunConsolidation] runs rounds in the background, in a goroutine
// the caller starts; see docs/consolidation.md.
//
// # Isolation and sharing
//
// An agent reads, lists and finds only its own blocks, archival entries and
// messages and the blocks shared with it ([Block.Share]); anything else
// is [ErrNotFound], so existence does not leak. A sharee edits the owner's
// CRDT document with the shared permission; its changes are attributed to
// it. [Store.SearchAll] is the system's cross-agent view.
//
// A Store is safe for concurrent use.
package memory
