package memory

import (
	"context"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

// The store's positional methods, exported to this package's external
// tests only: TestAgentHandleMatchesPositional makes each call both ways
// and compares. Everything else reaches them through the handles.

func (c *Store) AppendMessage(ctx context.Context, agent string, m Message) (Message, error) {
	return c.appendMessage(ctx, agent, m)
}

func (c *Store) AppendMessages(ctx context.Context, agent string, msgs []Message) ([]Message, error) {
	return c.addMessages(ctx, agent, msgs)
}

func (c *Store) AppendToBlock(ctx context.Context, agent, label, text string) error {
	return c.appendToBlock(ctx, agent, label, text)
}

func (c *Store) ApplyEdit(ctx context.Context, agent, owner, label string, e Edit) error {
	return c.applyEdit(ctx, agent, owner, label, e)
}

func (c *Store) ApproveProposal(ctx context.Context, id int64, approver string) error {
	return c.approveProposal(ctx, id, approver)
}

func (c *Store) Batches(ctx context.Context, agent string) ([]Batch, error) {
	return c.batches(ctx, agent)
}

func (c *Store) BlockAt(ctx context.Context, agent, owner, label string, heads []string) (*blocks.Document, error) {
	return c.blockAt(ctx, agent, owner, label, heads)
}

func (c *Store) BlockHistory(ctx context.Context, agent, owner, label string) ([]blocks.Change, error) {
	return c.blockHistory(ctx, agent, owner, label)
}

func (c *Store) BlocksStamp(ctx context.Context, agent string) (BlocksStamp, error) {
	return c.blocksStamp(ctx, agent)
}

func (c *Store) Compact(ctx context.Context, agent, label string) error {
	return c.compactBlock(ctx, agent, label)
}

func (c *Store) CompleteBatch(ctx context.Context, agent, batchID string) error {
	return c.completeBatch(ctx, agent, batchID)
}

func (c *Store) CreateBlock(ctx context.Context, agent string, spec BlockSpec) (*blocks.Document, error) {
	return c.createBlock(ctx, agent, spec)
}

func (c *Store) DeleteArchival(ctx context.Context, agent string, id int64) error {
	return c.deleteArchival(ctx, agent, id)
}

func (c *Store) DeleteBlock(ctx context.Context, agent, label string) error {
	return c.deleteBlock(ctx, agent, label)
}

func (c *Store) ExportAgent(ctx context.Context, agent string) (*Dump, error) {
	return c.export(ctx, agent)
}

func (c *Store) GetArchival(ctx context.Context, agent string, id int64) (ArchivalEntry, error) {
	return c.getArchival(ctx, agent, id)
}

func (c *Store) GetBlock(ctx context.Context, agent, label string) (*blocks.Document, error) {
	return c.getBlock(ctx, agent, label)
}

func (c *Store) GetSharedBlock(ctx context.Context, requester, owner, label string) (*blocks.Document, error) {
	return c.getSharedBlock(ctx, requester, owner, label)
}

func (c *Store) InsertArchival(ctx context.Context, agent string, e ArchivalEntry) (ArchivalEntry, error) {
	return c.addArchival(ctx, agent, e)
}

func (c *Store) InsertArchivalBatch(ctx context.Context, agent string, entries []ArchivalEntry, opts *BatchOptions) ([]ArchivalEntry, error) {
	return c.insertArchivalBatch(ctx, agent, entries, opts)
}

func (c *Store) LatestSummary(ctx context.Context, agent string) (Summary, error) {
	return c.latestSummary(ctx, agent)
}

func (c *Store) ListArchival(ctx context.Context, agent string, q *ArchivalQuery) ([]ArchivalEntry, error) {
	return c.listArchival(ctx, agent, q)
}

func (c *Store) ListBlocks(ctx context.Context, agent string) ([]BlockMeta, error) {
	return c.blocksOf(ctx, agent)
}

func (c *Store) ListBlocksByType(ctx context.Context, agent string, t blocks.Type) ([]BlockMeta, error) {
	return c.listBlocksByType(ctx, agent, t)
}

func (c *Store) ListProposals(ctx context.Context, owner, label string) ([]Proposal, error) {
	return c.listProposals(ctx, owner, label)
}

func (c *Store) ListSharedBlocks(ctx context.Context, agent string) ([]SharedBlock, error) {
	return c.listSharedBlocks(ctx, agent)
}

func (c *Store) MergeChanges(ctx context.Context, agent, owner, label string, data []byte) error {
	return c.mergeChanges(ctx, agent, owner, label, data)
}

func (c *Store) Messages(ctx context.Context, agent string, q *MessageQuery) ([]Message, error) {
	return c.messages(ctx, agent, q)
}

func (c *Store) PersistBlock(ctx context.Context, agent, label string) error {
	return c.persistBlock(ctx, agent, label)
}

func (c *Store) ProposeEdit(ctx context.Context, agent, owner, label string, e Edit, reason string) (Proposal, error) {
	return c.proposeEdit(ctx, agent, owner, label, e, reason)
}

func (c *Store) Rebase(ctx context.Context, agent, label string) error {
	return c.rebaseBlock(ctx, agent, label)
}

func (c *Store) RejectProposal(ctx context.Context, id int64, approver, reason string) error {
	return c.rejectProposal(ctx, id, approver, reason)
}

func (c *Store) RenderedContent(ctx context.Context, agent, label string) (string, error) {
	return c.renderedContent(ctx, agent, label)
}

func (c *Store) ReplaceInBlock(ctx context.Context, agent, label, old, new string) (found bool, err error) {
	return c.replaceInBlock(ctx, agent, label, old, new)
}

func (c *Store) SaveSummary(ctx context.Context, agent string, s Summary) (Summary, error) {
	return c.saveSummary(ctx, agent, s)
}

func (c *Store) Search(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error) {
	return c.search(ctx, agent, query, opts)
}

func (c *Store) SearchArchival(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error) {
	return c.searchArchival(ctx, agent, query, opts)
}

func (c *Store) SetBlockPermission(ctx context.Context, agent, label string, p blocks.Permission) error {
	return c.setBlockPermission(ctx, agent, label, p)
}

func (c *Store) SetBlockPinned(ctx context.Context, agent, label string, pinned bool) error {
	return c.setBlockPinned(ctx, agent, label, pinned)
}

func (c *Store) SetBlockType(ctx context.Context, agent, label string, t blocks.Type) error {
	return c.setBlockType(ctx, agent, label, t)
}

func (c *Store) ShareBlock(ctx context.Context, owner, label, withAgent string, perm blocks.Permission) error {
	return c.shareBlock(ctx, owner, label, withAgent, perm)
}

func (c *Store) SupersedeArchival(ctx context.Context, agent string, oldID int64, e ArchivalEntry) (ArchivalEntry, error) {
	return c.supersedeArchival(ctx, agent, oldID, e)
}

func (c *Store) UnshareBlock(ctx context.Context, owner, label, withAgent string) error {
	return c.unshareBlock(ctx, owner, label, withAgent)
}

func (c *Store) UpdateBlockSchema(ctx context.Context, agent, label string, s schema.Schema) error {
	return c.updateBlockSchema(ctx, agent, label, s)
}

func (c *Store) UpdateBlockText(ctx context.Context, agent, label, text string) error {
	return c.updateBlockText(ctx, agent, label, text)
}

// SetConsolidateCandidateBytes lowers the bytes of older candidates a
// consolidation round reads, for tests of the budget.
func SetConsolidateCandidateBytes(c *Store, n int) { c.consolidateCandidateBytes = n }

// NormalizeUnicode is NormalizeContent without its ASCII fast path.
var NormalizeUnicode = normalizeUnicode
