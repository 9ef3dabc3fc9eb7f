package memory

import (
	"io"
	"log/slog"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/search"
)

// Options configure a Store. The zero value (or nil) means the documented
// defaults.
type Options struct {
	// CacheSize is how many block documents stay in memory (default 256).
	CacheSize int
	// CacheBytes bounds the memory the cached block documents take, as
	// estimated from each one's size (DocumentBytes; default
	// DefaultCacheBytes; negative: no bound but CacheSize). Past it, the
	// least recently used documents leave the cache when the next one is
	// loaded, so that a few large blocks do not hold the memory hundreds
	// of small ones would; the most recently used one always stays, so a
	// block estimated past the bound alone is loaded again after any
	// other is. With WriteBack only CacheSize bounds the cache: each
	// eviction of a document with pending edits is a flush of them, and
	// a byte bound would make them frequent.
	CacheBytes int64
	// WriteBack defers persisting changes until Block.Persist, Flush, Close or
	// eviction. The default is write-through: a mutating call returns only
	// after its change is durable.
	WriteBack bool
	// Approver decides Partner/Human writes; nil denies them (they are kept
	// as proposals).
	Approver blocks.Approver
	// Embedder, when set, embeds blocks, archival entries and messages for
	// vector and hybrid search. The database records its name and
	// dimensions; opening with a different one fails with
	// search.ErrEmbedderMismatch until Reembed runs. The first embedder a
	// database that already holds content is opened with embeds that
	// content during Open (as Reembed does) before it is recorded; if that
	// fails, Open fails and nothing is recorded.
	Embedder search.Embedder
	// BusyTimeout is how long a write waits for another process's lock
	// (default 10s).
	BusyTimeout time.Duration
	// CompactAfter folds a block's incremental updates into its snapshot once
	// this many have accumulated (default 128), and for a large block only
	// once there is also one update per compactCharsPerUpdate (128)
	// characters of content: saving a snapshot costs time in proportion to
	// the block, so a large block is compacted less often than every 128
	// appends (figures in docs/design.md, "How a write works"), and loading those updates still costs no more than loading the
	// snapshot they would have been folded into.
	CompactAfter int
	// HistoryLimit bounds what a block's history costs to load: once the
	// automerge changes written in the block's current epoch exceed this
	// many bytes (default 64 KiB; negative: never), and both they and the
	// estimated cost of loading them are at least 4× the block's size,
	// compaction rebases the block onto a fresh document holding only its
	// current value (a new epoch), built behind the write that compacted
	// it: no write waits for the build, and Flush and Close wait for it to
	// finish. The retired history is archived:
	// Block.History and Block.At still read it, but no load or write does. A
	// block that only grows, by appends of a line or so, does not qualify:
	// its history is mostly its content, and a rebase would rebuild all of
	// it to save little.
	HistoryLimit int
	// VectorCacheBytes bounds the in-memory copy of the vectors that vector
	// and hybrid legs scan instead of the database (faster KNN than the
	// exact scan inside SQLite; sizes and figures in docs/performance.md).
	// On SQLite it is kept by default up to 256 MiB (negative:
	// none), loaded in the background from the first vector search on
	// while SQL answers; a database whose vectors need more than the bound
	// searches in SQL. On
	// PostgreSQL pgvector answers by default; a positive bound asks for
	// the in-process copy.
	VectorCacheBytes int64
	// TextCacheBytes bounds the in-memory copy of the full-text index that
	// full-text legs rank over (default 64 MiB, negative: no copy): FTS5's
	// bm25 over the same terms, returning what FTS5 would, faster. On
	// PostgreSQL the copy ranks with the same BM25 as on SQLite where the
	// tsvector query ranks with an IDF-weighted ts_rank, more slowly
	// (quality and speed in docs/performance.md); a search
	// answered in SQL while the copy loads may order its results a little
	// differently, and only the copy finds metadata booleans (as 1 and 0,
	// as FTS5 does on SQLite). It costs about 8 bytes per distinct
	// word per row (measured sizes in docs/performance.md). The first
	// search starts building it in the background and searches rank in SQL until it
	// is ready; of a database whose copy would exceed the bound it holds
	// the partitions of the agents searched lately, ranked with the
	// store-wide statistics (on PostgreSQL computed by a background pass,
	// SQL ranking until it is done).
	TextCacheBytes int64
	// Prewarm has a long-lived process (a server: engram serve, engram
	// mcp and engram ui set it) ready its search caches in the background
	// as it opens, instead of at the first search: a store too big for
	// them loads the partitions the last prewarming process held (it
	// records them every five minutes and at Close), so that the agents
	// active before a restart do not each pay for loading theirs in their
	// first search after it. Off by default: a short-lived process would
	// spend its time loading agents it never serves, and its record would
	// replace the server's. Without a text cache (TextCacheBytes < 0) it
	// does nothing.
	Prewarm bool
	// TextStatsDrift, between 0 and 1, matters with a partial text
	// cache (a store too big for TextCacheBytes), which ranks with
	// store-wide bm25 statistics. Another process's delete or rewrite of
	// a row no partition here holds cannot be followed exactly (which
	// terms the row held is known only from its old text). By default
	// (0) the statistics are then dropped: on PostgreSQL that content
	// type's searches rank in SQL until a pass over every row has
	// counted them again, on SQLite the next search counts its terms in
	// the whole store again. With a share, such rows are followed
	// approximately (a deleted row stops counting; its terms'
	// frequencies stay; each term of a rewritten row counts at least
	// once) and searches keep ranking in the cache, with scores off by
	// those rows, until they exceed this share of the type's rows and a
	// pass counts again: 0.005 of 200,000 archival entries is a pass per
	// about 333 deletes, each moving its neighbours' indexed text too.
	// While the pass rests (it takes at most a tenth of the time), the
	// statistics are dropped as without a share once the drift passes
	// twenty times it (a tenth of the rows at 0.005). engram serve
	// (--stats-drift), mcp and ui set 0.005.
	// Outside [0, 1], Open fails.
	TextStatsDrift float64
	// Reranker, when set, rescores the first RerankDepth results of every
	// search (off by default); RerankStrict
	// makes its failures fail the search (search.ErrReranker) instead of
	// leaving the fused order; RerankBackoff is how long searches skip it
	// after a failure.
	Reranker      search.Reranker
	RerankDepth   int
	RerankStrict  bool
	RerankBackoff time.Duration
	// OpenForReembed lets Open succeed when the database records another
	// embedder than Embedder: FTS works and Reembed switches the database
	// over; vector work fails with search.ErrEmbedderMismatch until then.
	// Without it, such an Open fails with search.ErrEmbedderMismatch.
	OpenForReembed bool
	// Per-entry caps, in bytes of UTF-8 as stored (0: the default,
	// negative: no cap). A write past one fails with ErrTooLarge, naming
	// the agent, the field, its size and the cap, and stores nothing. They
	// hold on every way an entry is written: Archival.Insert,
	// Archival.InsertBatch (checked for every entry before any is written),
	// Archival.Supersede, Messages.Append(Many) and Import (which refuses a dump
	// holding an entry past a cap, naming the entry, and imports nothing).
	// Entries a Log block rotates into archival are exempt: the block's
	// character limit bounds them, and refusing one would refuse every
	// later append to the block.
	//
	// MaxArchivalBytes caps an archival entry's content (default 1 MiB).
	MaxArchivalBytes int
	// MaxMetadataBytes caps an archival entry's metadata as stored JSON
	// (default 64 KiB).
	MaxMetadataBytes int
	// MaxTags caps how many distinct tags an archival entry has (default
	// 64), and MaxTagBytes how long each may be (default 256 bytes).
	MaxTags     int
	MaxTagBytes int
	// MaxMessageBytes caps a message: its content, name, tool call id and
	// tool calls (as JSON) together (default 1 MiB).
	MaxMessageBytes int
	// MaxProposalBytes caps a proposal: its edit (as JSON) and reason
	// together (default 64 KiB); MaxPendingProposals how many proposals an
	// agent may have pending at once (default 256). With a quota, pending
	// proposals count toward it too (see AgentQuotaBytes).
	MaxProposalBytes    int
	MaxPendingProposals int
	// AgentQuotaBytes bounds what each agent's archival entries and
	// messages may hold together (0 or negative, the default: no quota).
	// An entry counts its content, metadata JSON and four times its tags
	// JSON (tags are stored four ways), a message
	// its content, name, tool call id and tool calls JSON, and each row
	// UsageRowBytes more for its row and index entries (so a quota bounds
	// rows too, not only text). A write that would take the agent past
	// the quota fails with ErrQuota and stores nothing: archival inserts
	// and supersessions, message appends, Import, and the archival rows a
	// Log block's append rotates out of the block (that append fails, and
	// the block keeps its entries). The check runs inside the write's
	// transaction, under the store's write lock, against a per-agent
	// counter the database keeps in the same transactions (see
	// StorageUsed), so concurrent writers, in this process or others on
	// the same database, cannot together overshoot it. DeleteArchival
	// gives an entry's bytes back; a superseded entry is kept (as
	// history) and still counts until it is deleted; messages are never
	// deleted by the store. An agent's pending proposals count too (their
	// edit and reason, UsageRowBytes each), checked when one is made; a
	// decided proposal no longer counts.
	AgentQuotaBytes int64
	// KeepDuplicates stores every archival insert as a new entry. By
	// default an insert whose content, normalised (NormalizeContent), and
	// conversation (its metadata's "conversation", else "session") equal a
	// live entry's of the same agent returns that entry, marked Duplicate,
	// with the tags and metadata merged in (see Archival.Insert); the
	// database's unique index on the live entries' keys holds that across
	// processes. Entries written with KeepDuplicates carry no key: later
	// inserts never match them (consolidation still finds them).
	KeepDuplicates bool
	// Logger receives debug and error logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock for timestamps (default time.Now).
	Now func() time.Time
}

// validate reports an option no store can take (ErrInvalidArgument).
func (o Options) validate() error {
	if d := o.TextStatsDrift; !(d >= 0 && d <= 1) {
		return invalidArg("Options.TextStatsDrift %v: want a share between 0 and 1", d)
	}
	return nil
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.CacheSize <= 0 {
		out.CacheSize = 256
	}
	if out.CacheBytes == 0 {
		out.CacheBytes = DefaultCacheBytes
	}
	if out.BusyTimeout <= 0 {
		out.BusyTimeout = 10 * time.Second
	}
	if out.CompactAfter <= 0 {
		out.CompactAfter = 128
	}
	if out.HistoryLimit == 0 {
		out.HistoryLimit = 64 << 10
	}
	for _, c := range []struct {
		v   *int
		def int
	}{
		{&out.MaxArchivalBytes, DefaultMaxArchivalBytes}, {&out.MaxMetadataBytes, DefaultMaxMetadataBytes},
		{&out.MaxTags, DefaultMaxTags}, {&out.MaxTagBytes, DefaultMaxTagBytes}, {&out.MaxMessageBytes, DefaultMaxMessageBytes},
		{&out.MaxProposalBytes, DefaultMaxProposalBytes}, {&out.MaxPendingProposals, DefaultMaxPendingProposals},
	} {
		if *c.v == 0 {
			*c.v = c.def
		}
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

// The per-entry caps' defaults (see Options.MaxArchivalBytes).
const (
	DefaultMaxArchivalBytes = 1 << 20
	DefaultMaxMetadataBytes = 64 << 10
	DefaultMaxTags          = 64
	DefaultMaxTagBytes      = 256
	DefaultMaxMessageBytes  = 1 << 20
	// DefaultMaxProposalBytes and DefaultMaxPendingProposals: see
	// Options.MaxProposalBytes.
	DefaultMaxProposalBytes    = 64 << 10
	DefaultMaxPendingProposals = 256
)

// UsageRowBytes is what each archival entry and message counts toward
// Options.AgentQuotaBytes beyond its text: about what its row, index
// entries and change-log row take on disk. The database's usage counter
// (migration sqlite/0025, postgres/0021) adds the same figure.
const UsageRowBytes = 256
