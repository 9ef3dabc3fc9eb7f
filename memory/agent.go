package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

// Agent acts on a store as one agent: everything an agent does (blocks,
// shares, proposals, archival memory, messages, search, its profile and
// context library) goes through its handle. An Agent fixes the acting
// agent once, and the block handles it gives out fix the owner and label,
// so a call names only what varies (the text, the edit, the query), and no
// agent, owner and label strings can be swapped.
//
// An Agent is a cheap value: it holds no resources, needs no closing and
// is safe for concurrent use; make one per request or keep one per agent,
// as convenient.
//
// The id is checked when the handle is used, not when it is made: every
// method already returns an error, and a constructor error would only
// move the same check one line up while forbidding chains such as
// store.Agent(id).Block(label).Append(ctx, text). An empty id makes every
// method fail with an error wrapping ErrInvalidArgument.
type Agent struct {
	s    *Store
	id   string
	msgs Messages
	arch Archival
}

// maxHandles bounds the handles a store keeps for reuse; beyond it Agent
// makes a new one per call (equal in every way but identity).
const maxHandles = 4096

// Agent returns a handle acting as agent id (see [Agent]). The same id
// gives the same handle, so a handle can key a cache.
func (c *Store) Agent(id string) *Agent {
	if a, ok := c.handles.Load(id); ok {
		return a.(*Agent)
	}
	a := agentOf(c, id)
	if c.handlesLen.Load() >= maxHandles {
		return a
	}
	if got, loaded := c.handles.LoadOrStore(id, a); loaded {
		return got.(*Agent)
	}
	c.handlesLen.Add(1)
	return a
}

// agentOf makes a handle acting as agent id on c.
func agentOf(c *Store, id string) *Agent {
	a := &Agent{s: c, id: id}
	a.msgs.a, a.arch.a = a, a
	return a
}

// ID is the agent the handle acts as.
func (a *Agent) ID() string { return a.id }

// check reports a cancelled context or an empty id, the two things every
// method refuses before it reaches the store. The store checks both too;
// checking here names the handle in the error and keeps an empty id from
// meaning "every agent" in the few calls where "" has that meaning
// (Export).
func (a *Agent) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if strings.TrimSpace(a.id) == "" {
		return invalidArg("agent handle has an empty agent id (store.Agent(%q))", a.id)
	}
	return nil
}

// CreateBlock creates a block owned by the agent (see Store.createBlock)
// and returns its handle.
func (a *Agent) CreateBlock(ctx context.Context, spec BlockSpec) (*Block, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	if _, err := a.s.createBlock(ctx, a.id, spec); err != nil {
		return nil, err
	}
	return a.Block(spec.Label), nil
}

// Block returns a handle on the agent's own block label. Nothing is read
// until a method runs: a block that does not exist is ErrNotFound then.
func (a *Agent) Block(label string) *Block {
	return &Block{s: a.s, agent: a.id, owner: a.id, label: label}
}

// Shared returns a handle on block label of owner, as shared with the
// agent: reads and writes go through the share and its permission. A
// block owner did not share with the agent is ErrNotFound on every
// method, exactly as if it did not exist. Shared(a.ID(), label) is the
// same as Block(label). An empty owner is an error, never "the agent's
// own".
func (a *Agent) Shared(owner, label string) *Block {
	return &Block{s: a.s, agent: a.id, owner: owner, label: label}
}

// Blocks lists the agent's own blocks (see Store.blocksOf).
func (a *Agent) Blocks(ctx context.Context) ([]BlockMeta, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.blocksOf(ctx, a.id)
}

// BlocksOfType lists the agent's own blocks of type t (see
// Store.listBlocksByType).
func (a *Agent) BlocksOfType(ctx context.Context, t blocks.Type) ([]BlockMeta, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.listBlocksByType(ctx, a.id, t)
}

// SharedBlocks lists the blocks others shared with the agent, with the
// shared permission (see Store.listSharedBlocks). Each one's handle is
// Shared(m.SharedFrom, m.Label).
func (a *Agent) SharedBlocks(ctx context.Context) ([]SharedBlock, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.listSharedBlocks(ctx, a.id)
}

// BlocksStamp fingerprints what Blocks and SharedBlocks would return (see
// Store.blocksStamp).
func (a *Agent) BlocksStamp(ctx context.Context) (BlocksStamp, error) {
	if err := a.check(ctx); err != nil {
		return BlocksStamp{}, err
	}
	return a.s.blocksStamp(ctx, a.id)
}

// Search searches what the agent may see: its own blocks, archival
// entries and messages, and blocks shared with it (see Store.search).
func (a *Agent) Search(ctx context.Context, query string, opts *search.Options) ([]search.Result, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.search(ctx, a.id, query, opts)
}

// Proposals lists the proposals on all of the agent's own blocks, oldest
// first (see Store.listProposals; [Block.Proposals] narrows to one block).
func (a *Agent) Proposals(ctx context.Context) ([]Proposal, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.listProposals(ctx, a.id, "")
}

// ApproveProposal approves and applies proposal id with the agent as the
// approver: it must own the block or have it shared at Admin (see
// Store.approveProposal, which also takes a person's "human:NAME").
func (a *Agent) ApproveProposal(ctx context.Context, id int64) error {
	if err := a.check(ctx); err != nil {
		return err
	}
	return a.s.approveProposal(ctx, id, a.id)
}

// RejectProposal rejects proposal id with the agent as the approver (who
// may: as for ApproveProposal).
func (a *Agent) RejectProposal(ctx context.Context, id int64, reason string) error {
	if err := a.check(ctx); err != nil {
		return err
	}
	return a.s.rejectProposal(ctx, id, a.id, reason)
}

// Export copies the agent's content into a [Dump] that [Store.Import]
// takes back: its blocks (whole automerge documents, archived epochs
// included) and their shares, the proposals on its blocks and its
// archival memory, its archival entries (superseded ones too), messages,
// batches, summaries, context library and profile, and the store's
// embedder record. Pending write-back edits are flushed first. Blocks
// shared with the agent are their owners' content and are not in it;
// [Store.Export] copies every agent's.
func (a *Agent) Export(ctx context.Context) (*Dump, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.export(ctx, a.id)
}

// Archival is the agent's archival memory.
func (a *Agent) Archival() *Archival { return &a.arch }

// Messages is the agent's conversation: messages, batches and summaries.
func (a *Agent) Messages() *Messages { return &a.msgs }

// Archival is one agent's archival memory (from [Agent.Archival]).
type Archival struct{ a *Agent }

// Insert stores an entry (see Store.addArchival).
func (r *Archival) Insert(ctx context.Context, e ArchivalEntry) (ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return ArchivalEntry{}, err
	}
	return r.a.s.addArchival(ctx, r.a.id, e)
}

// InsertBatch stores many entries (see Store.insertArchivalBatch: all are
// checked before any is written; on a later failure the entries already
// committed are returned with the error).
func (r *Archival) InsertBatch(ctx context.Context, entries []ArchivalEntry, opts *BatchOptions) ([]ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return nil, err
	}
	return r.a.s.insertArchivalBatch(ctx, r.a.id, entries, opts)
}

// Get returns entry id (see Store.getArchival).
func (r *Archival) Get(ctx context.Context, id int64) (ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return ArchivalEntry{}, err
	}
	return r.a.s.getArchival(ctx, r.a.id, id)
}

// List lists entries (see Store.listArchival; nil q means the defaults).
func (r *Archival) List(ctx context.Context, q *ArchivalQuery) ([]ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return nil, err
	}
	return r.a.s.listArchival(ctx, r.a.id, q)
}

// Supersede stores e as the new version of entry oldID (see
// Store.supersedeArchival).
func (r *Archival) Supersede(ctx context.Context, oldID int64, e ArchivalEntry) (ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return ArchivalEntry{}, err
	}
	return r.a.s.supersedeArchival(ctx, r.a.id, oldID, e)
}

// Delete deletes entry id (see Store.deleteArchival).
func (r *Archival) Delete(ctx context.Context, id int64) error {
	if err := r.a.check(ctx); err != nil {
		return err
	}
	return r.a.s.deleteArchival(ctx, r.a.id, id)
}

// Search searches the agent's archival entries only (see
// Store.searchArchival; [Agent.Search] covers everything it sees).
func (r *Archival) Search(ctx context.Context, query string, opts *search.Options) ([]search.Result, error) {
	if err := r.a.check(ctx); err != nil {
		return nil, err
	}
	return r.a.s.searchArchival(ctx, r.a.id, query, opts)
}

// Messages is one agent's conversation (from [Agent.Messages]): messages,
// batches and summaries.
type Messages struct{ a *Agent }

// Append stores one message (see Store.appendMessage).
func (m *Messages) Append(ctx context.Context, msg Message) (Message, error) {
	if err := m.a.check(ctx); err != nil {
		return Message{}, err
	}
	return m.a.s.appendMessage(ctx, m.a.id, msg)
}

// AppendMany stores messages in one transaction (see
// Store.addMessages).
func (m *Messages) AppendMany(ctx context.Context, msgs []Message) ([]Message, error) {
	if err := m.a.check(ctx); err != nil {
		return nil, err
	}
	return m.a.s.addMessages(ctx, m.a.id, msgs)
}

// List returns messages (see Store.messages; nil q means all, oldest
// first).
func (m *Messages) List(ctx context.Context, q *MessageQuery) ([]Message, error) {
	if err := m.a.check(ctx); err != nil {
		return nil, err
	}
	return m.a.s.messages(ctx, m.a.id, q)
}

// CompleteBatch marks batch batchID complete (see Store.completeBatch).
func (m *Messages) CompleteBatch(ctx context.Context, batchID string) error {
	if err := m.a.check(ctx); err != nil {
		return err
	}
	return m.a.s.completeBatch(ctx, m.a.id, batchID)
}

// Batches lists the agent's batches (see Store.batches).
func (m *Messages) Batches(ctx context.Context) ([]Batch, error) {
	if err := m.a.check(ctx); err != nil {
		return nil, err
	}
	return m.a.s.batches(ctx, m.a.id)
}

// SaveSummary stores a summary (see Store.saveSummary).
func (m *Messages) SaveSummary(ctx context.Context, s Summary) (Summary, error) {
	if err := m.a.check(ctx); err != nil {
		return Summary{}, err
	}
	return m.a.s.saveSummary(ctx, m.a.id, s)
}

// LatestSummary returns the newest summary (see Store.latestSummary).
func (m *Messages) LatestSummary(ctx context.Context) (Summary, error) {
	if err := m.a.check(ctx); err != nil {
		return Summary{}, err
	}
	return m.a.s.latestSummary(ctx, m.a.id)
}

// Block is one block as one agent sees it: the acting agent, the owner
// and the label, fixed when the handle was made ([Agent.Block] for the
// agent's own block, [Agent.Shared] for one shared with it). Like Agent it
// is a cheap value that reads nothing until a method runs; each method
// resolves the block afresh, so a handle stays valid across deletes,
// re-creations, shares and revocations, and always reflects the current
// permission.
//
// Reads and edits work on own and shared blocks alike, through the
// share's permission for a shared one. Changing the block itself
// (Delete, Share, Unshare, SetPinned, SetType, SetSchema, SetPermission,
// Compact, Rebase) is the owner's: through a shared handle those return
// an error matching blocks.ErrPermission (or ErrNotFound when the block is
// not shared with the agent, so existence does not leak).
type Block struct {
	s                   *Store
	agent, owner, label string
}

// Owner is the agent that owns the block.
func (b *Block) Owner() string { return b.owner }

// Label is the block's label.
func (b *Block) Label() string { return b.label }

// Accessor is the agent the handle acts as (the owner for an own block,
// the sharee for a shared one).
func (b *Block) Accessor() string { return b.agent }

// own tells an own block's handle from a shared one's.
func (b *Block) own() bool { return b.owner == b.agent }

// check refuses, before the store sees them, a cancelled context and the
// empty ids whose meaning would otherwise change: an empty owner is "own"
// to the Store, and an empty label lists every block in ListProposals.
func (b *Block) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if strings.TrimSpace(b.agent) == "" {
		return invalidArg("handle on block %q of %q has an empty acting agent id (store.Agent(%q))", b.label, b.owner, b.agent)
	}
	if strings.TrimSpace(b.owner) == "" {
		return invalidArg("agent %q: handle on block %q has an empty owner (Shared(%q, %q))", b.agent, b.label, b.owner, b.label)
	}
	if strings.TrimSpace(b.label) == "" {
		return invalidArg("agent %q: handle on a block of %q has an empty label", b.agent, b.owner)
	}
	return nil
}

// ownerOnly lets the owner through; a sharee gets ErrNotFound when the
// block is not shared with it (as for every read) and an error matching
// blocks.ErrPermission when it is.
func (b *Block) ownerOnly(ctx context.Context, what string) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	if b.own() {
		return nil
	}
	if _, err := b.s.getSharedBlock(ctx, b.agent, b.owner, b.label); err != nil {
		return err
	}
	return fmt.Errorf("%w: agent %q may not %s block %q of agent %q: only its owner can",
		blocks.ErrPermission, b.agent, what, b.label, b.owner)
}

// Doc returns the agent's live view of the block, with its effective
// permission (see Store.getBlock and Store.getSharedBlock).
func (b *Block) Doc(ctx context.Context) (*blocks.Document, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	if b.own() {
		return b.s.getBlock(ctx, b.agent, b.label)
	}
	return b.s.getSharedBlock(ctx, b.agent, b.owner, b.label)
}

// Render returns the block as a model sees it. An own block's comes from
// the stored rendering (Store.renderedContent, no document load); a
// shared block's from the shared view, since the stored rendering has no
// share check of its own.
func (b *Block) Render(ctx context.Context) (string, error) {
	if err := b.check(ctx); err != nil {
		return "", err
	}
	if b.own() {
		return b.s.renderedContent(ctx, b.agent, b.label)
	}
	doc, err := b.s.getSharedBlock(ctx, b.agent, b.owner, b.label)
	if err != nil {
		return "", err
	}
	return doc.Render(), nil
}

// Apply applies one edit as the agent (see Store.applyEdit: a Partner or
// Human edit not yet approved is kept as a proposal and reported as a
// *ProposalError).
func (b *Block) Apply(ctx context.Context, e Edit) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	return b.s.applyEdit(ctx, b.agent, b.owner, b.label, e)
}

// SetText replaces a Text block's content (see Store.updateBlockText).
func (b *Block) SetText(ctx context.Context, text string) error {
	return b.Apply(ctx, Edit{Op: blocks.OpSetText, Text: text})
}

// Append appends to a Text block (see Store.appendToBlock); a share at
// Append permission allows it.
func (b *Block) Append(ctx context.Context, text string) error {
	return b.Apply(ctx, Edit{Op: blocks.OpAppendText, Text: text})
}

// Replace replaces the first occurrence of old with new in a Text block
// and reports whether old occurred. As on every write path (see
// Store.replaceInBlock), when old does not occur nothing changes and the
// error wraps ErrNoMatch; found is err == nil.
func (b *Block) Replace(ctx context.Context, old, new string) (bool, error) {
	err := b.Apply(ctx, Edit{Op: blocks.OpReplaceText, Old: old, Text: new})
	return err == nil, err
}

// Merge merges automerge changes made outside the store into the block,
// validated, persisted and attributed to the agent — in the block's
// history too, whatever the changes' commit messages say (see
// Store.mergeChanges; it needs Append or above, and the merged changes
// are judged as an edit at the handle's permission: at Append, only
// appends come in).
func (b *Block) Merge(ctx context.Context, data []byte) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	return b.s.mergeChanges(ctx, b.agent, b.owner, b.label, data)
}

// History lists the block's changes across its epochs (see
// Store.blockHistory).
func (b *Block) History(ctx context.Context) ([]blocks.Change, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return b.s.blockHistory(ctx, b.agent, b.owner, b.label)
}

// At is a read-only view of the block as of heads from History (see
// Store.blockAt).
func (b *Block) At(ctx context.Context, heads []string) (*blocks.Document, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return b.s.blockAt(ctx, b.agent, b.owner, b.label, heads)
}

// Propose records an edit for the block's approver to decide (see
// Store.proposeEdit).
func (b *Block) Propose(ctx context.Context, e Edit, reason string) (Proposal, error) {
	if err := b.check(ctx); err != nil {
		return Proposal{}, err
	}
	return b.s.proposeEdit(ctx, b.agent, b.owner, b.label, e, reason)
}

// Proposals lists proposals on the block, oldest first: all of them for
// the owner (see Store.listProposals); for a sharee only its own, since
// the others' edits and reasons are theirs and the owner's. Unlike
// ListProposals, which lists nothing for a label its owner does not use,
// a missing block is ErrNotFound, as for every other method.
func (b *Block) Proposals(ctx context.Context) ([]Proposal, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	if b.own() {
		// The stored rendering is the cheapest existence check (one row,
		// no document load).
		if _, err := b.s.renderedContent(ctx, b.owner, b.label); err != nil {
			return nil, err
		}
		return b.s.listProposals(ctx, b.owner, b.label)
	}
	if _, err := b.s.getSharedBlock(ctx, b.agent, b.owner, b.label); err != nil {
		return nil, err
	}
	all, err := b.s.listProposals(ctx, b.owner, b.label)
	if err != nil {
		return nil, err
	}
	var mine []Proposal
	for _, p := range all {
		if p.Proposer == b.agent {
			mine = append(mine, p)
		}
	}
	return mine, nil
}

// Share shares the block with agent with at perm; sharing again changes
// the permission (see Store.shareBlock). Owner only.
func (b *Block) Share(ctx context.Context, with string, perm blocks.Permission) error {
	if err := b.ownerOnly(ctx, "share"); err != nil {
		return err
	}
	return b.s.shareBlock(ctx, b.owner, b.label, with, perm)
}

// Unshare revokes the share with agent with, and that agent's pending
// proposals on the block (see Store.unshareBlock). Owner only.
func (b *Block) Unshare(ctx context.Context, with string) error {
	if err := b.ownerOnly(ctx, "unshare"); err != nil {
		return err
	}
	if strings.TrimSpace(with) == "" {
		return invalidArg("agent %q: unshare block %q: the agent to unshare from is empty", b.agent, b.label)
	}
	return b.s.unshareBlock(ctx, b.owner, b.label, with)
}

// Delete deletes the block (see Store.deleteBlock; it needs Admin). Owner
// only.
func (b *Block) Delete(ctx context.Context) error {
	if err := b.ownerOnly(ctx, "delete"); err != nil {
		return err
	}
	return b.s.deleteBlock(ctx, b.owner, b.label)
}

// SetPinned pins or unpins the block (see Store.setBlockPinned). Owner
// only.
func (b *Block) SetPinned(ctx context.Context, pinned bool) error {
	if err := b.ownerOnly(ctx, "pin or unpin"); err != nil {
		return err
	}
	return b.s.setBlockPinned(ctx, b.owner, b.label, pinned)
}

// SetType changes the block's type (see Store.setBlockType). Owner only.
func (b *Block) SetType(ctx context.Context, t blocks.Type) error {
	if err := b.ownerOnly(ctx, "change the type of"); err != nil {
		return err
	}
	return b.s.setBlockType(ctx, b.owner, b.label, t)
}

// SetSchema changes the block's schema within its kind (see
// Store.updateBlockSchema). Owner only.
func (b *Block) SetSchema(ctx context.Context, s schema.Schema) error {
	if err := b.ownerOnly(ctx, "change the schema of"); err != nil {
		return err
	}
	return b.s.updateBlockSchema(ctx, b.owner, b.label, s)
}

// SetPermission changes the owner's own permission on the block (see
// Store.setBlockPermission); a share's permission is changed by sharing
// again. Owner only.
func (b *Block) SetPermission(ctx context.Context, p blocks.Permission) error {
	if err := b.ownerOnly(ctx, "change the permission of"); err != nil {
		return err
	}
	return b.s.setBlockPermission(ctx, b.owner, b.label, p)
}

// Persist makes the block's pending changes durable now (see
// Store.persistBlock; only write-back mode has any). A sharee may persist
// too: it writes what is already in the shared document and reveals or
// changes nothing else.
func (b *Block) Persist(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	if !b.own() {
		if _, err := b.s.getSharedBlock(ctx, b.agent, b.owner, b.label); err != nil {
			return err
		}
	}
	return b.s.persistBlock(ctx, b.owner, b.label)
}

// Compact folds the block's updates into its snapshot now (see
// Store.compactBlock). Owner only.
func (b *Block) Compact(ctx context.Context) error {
	if err := b.ownerOnly(ctx, "compact"); err != nil {
		return err
	}
	return b.s.compactBlock(ctx, b.owner, b.label)
}

// Rebase starts a new epoch of the block's history now (see
// Store.rebaseBlock). Owner only.
func (b *Block) Rebase(ctx context.Context) error {
	if err := b.ownerOnly(ctx, "rebase"); err != nil {
		return err
	}
	return b.s.rebaseBlock(ctx, b.owner, b.label)
}

// StorageUsed is what the agent's archival entries and messages count
// toward Options.AgentQuotaBytes (see Store.storageUsed).
func (a *Agent) StorageUsed(ctx context.Context) (int64, error) {
	if err := a.check(ctx); err != nil {
		return 0, err
	}
	return a.s.storageUsed(ctx, a.id)
}

// ContextLibrary returns the agent's context library in first-seen order
// (see Store.contextLibrary).
func (a *Agent) ContextLibrary(ctx context.Context) ([]LibraryEntry, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	c := a.s
	return c.contextLibrary(ctx, a.id)
}

// PutContextLibrary adds or updates entries of the agent's context library
// (see Store.putContextLibrary).
func (a *Agent) PutContextLibrary(ctx context.Context, entries []LibraryEntry) error {
	if err := a.check(ctx); err != nil {
		return err
	}
	c := a.s
	return c.putContextLibrary(ctx, a.id, entries)
}

// RemoveFromContextLibrary deletes artifacts from the agent's context
// library; no ids means all of them (see Store.removeFromContextLibrary).
func (a *Agent) RemoveFromContextLibrary(ctx context.Context, ids ...string) error {
	if err := a.check(ctx); err != nil {
		return err
	}
	c := a.s
	return c.removeFromContextLibrary(ctx, a.id, ids...)
}

// DocumentBlock returns the handle of the block whose current epoch has
// document id, if the agent may read it (see Store.documentBlock: every
// id the agent cannot use is the same ErrNotFound).
func (a *Agent) DocumentBlock(ctx context.Context, id DocumentID) (*Block, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	c := a.s
	owner, label, err := c.documentBlock(ctx, a.id, id)
	if err != nil {
		return nil, err
	}
	return a.Shared(owner, label), nil
}

// DocumentID returns the automerge document id of the block's current
// epoch, made on first use (see Store.documentID).
func (b *Block) DocumentID(ctx context.Context) (DocumentID, error) {
	if err := b.check(ctx); err != nil {
		return DocumentID{}, err
	}
	c := b.s
	return c.documentID(ctx, b.agent, b.owner, b.label)
}

// MergeAs is Merge with the merge recorded as made by as, a name the
// caller vouches for (a person on whose behalf the agent merges, such as
// "human:NAME"); the handle's permission is the one checked (see
// Store.mergeChangesAs).
func (b *Block) MergeAs(ctx context.Context, data []byte, as string) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	c := b.s
	return c.mergeChangesAs(ctx, b.agent, b.owner, b.label, data, as)
}
