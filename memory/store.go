package memory

import (
	"context"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

// Store is what every consumer of memory (builder, tools, CLI) uses. Every
// method takes a context first and honours its cancellation. Agent ids name
// the caller: an agent sees its own blocks, archival entries and messages
// and the blocks shared with it, nothing else. Missing or invisible things
// return errors matching ErrNotFound; duplicates ErrExists; refused writes
// blocks.ErrPermission.
//
// Cache is the default implementation; memory/storetest checks any
// implementation against this contract.
type Store interface {
	// Blocks.
	CreateBlock(ctx context.Context, agent string, spec BlockSpec) (*blocks.Document, error)
	GetBlock(ctx context.Context, agent, label string) (*blocks.Document, error)
	ListBlocks(ctx context.Context, agent string) ([]BlockMeta, error)
	ListBlocksByType(ctx context.Context, agent string, t blocks.Type) ([]BlockMeta, error)
	// BlocksStamp fingerprints what ListBlocks and ListSharedBlocks would
	// return for agent: equal stamps mean equal listings. Read it before
	// listing when caching listings under it.
	BlocksStamp(ctx context.Context, agent string) (BlocksStamp, error)
	DeleteBlock(ctx context.Context, agent, label string) error
	RenderedContent(ctx context.Context, agent, label string) (string, error)
	UpdateBlockText(ctx context.Context, agent, label, text string) error
	AppendToBlock(ctx context.Context, agent, label, text string) error
	ReplaceInBlock(ctx context.Context, agent, label, old, new string) (bool, error)
	ApplyEdit(ctx context.Context, agent, owner, label string, e Edit) error
	PersistBlock(ctx context.Context, agent, label string) error
	SetBlockPinned(ctx context.Context, agent, label string, pinned bool) error
	SetBlockType(ctx context.Context, agent, label string, t blocks.Type) error
	UpdateBlockSchema(ctx context.Context, agent, label string, s schema.Schema) error
	BlockHistory(ctx context.Context, agent, owner, label string) ([]blocks.Change, error)
	// BlockAt is a read-only view of a block as of heads from BlockHistory,
	// in whichever epoch holds them.
	BlockAt(ctx context.Context, agent, owner, label string, heads []string) (*blocks.Document, error)
	// MergeChanges merges automerge changes made elsewhere (automerge JS, a
	// fork) into a block, judged as agent's edit would be (schema,
	// read-only parts, permission, limit), persisted and attributed to
	// agent.
	MergeChanges(ctx context.Context, agent, owner, label string, data []byte) error

	// Sharing.
	ShareBlock(ctx context.Context, owner, label, withAgent string, perm blocks.Permission) error
	UnshareBlock(ctx context.Context, owner, label, withAgent string) error
	ListSharedBlocks(ctx context.Context, agent string) ([]SharedBlock, error)
	GetSharedBlock(ctx context.Context, requester, owner, label string) (*blocks.Document, error)

	// Proposals for Partner/Human blocks.
	ProposeEdit(ctx context.Context, agent, owner, label string, e Edit, reason string) (Proposal, error)
	ListProposals(ctx context.Context, owner, label string) ([]Proposal, error)
	ApproveProposal(ctx context.Context, id int64, approver string) error
	RejectProposal(ctx context.Context, id int64, approver, reason string) error

	// Archival memory.
	InsertArchival(ctx context.Context, agent string, e ArchivalEntry) (ArchivalEntry, error)
	InsertArchivalBatch(ctx context.Context, agent string, entries []ArchivalEntry, opts *BatchOptions) ([]ArchivalEntry, error)
	GetArchival(ctx context.Context, agent string, id int64) (ArchivalEntry, error)
	ListArchival(ctx context.Context, agent string, q *ArchivalQuery) ([]ArchivalEntry, error)
	SupersedeArchival(ctx context.Context, agent string, oldID int64, e ArchivalEntry) (ArchivalEntry, error)
	DeleteArchival(ctx context.Context, agent string, id int64) error
	// StorageUsed is what the agent's archival entries and messages
	// count toward Options.AgentQuotaBytes.
	StorageUsed(ctx context.Context, agent string) (int64, error)

	// Search.
	SearchArchival(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error)
	Search(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error)
	SearchAll(ctx context.Context, query string, opts *search.Options) ([]search.Result, error)

	// Messages, batches and summaries.
	AppendMessage(ctx context.Context, agent string, m Message) (Message, error)
	AppendMessages(ctx context.Context, agent string, msgs []Message) ([]Message, error)
	Messages(ctx context.Context, agent string, q *MessageQuery) ([]Message, error)
	CompleteBatch(ctx context.Context, agent, batchID string) error
	Batches(ctx context.Context, agent string) ([]Batch, error)
	SaveSummary(ctx context.Context, agent string, s Summary) (Summary, error)
	LatestSummary(ctx context.Context, agent string) (Summary, error)

	Flush(ctx context.Context) error
	Close() error
}

var _ Store = (*Cache)(nil)
