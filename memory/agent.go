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

// CreateBlock creates a block owned by the agent, as spec describes it,
// and returns its handle. What spec leaves zero takes the defaults
// [BlockSpec] gives; spec.Value, when set, is the initial content, written
// by the system in the creating change (fields of a Map block it leaves
// out keep their schema defaults). The block is durable when CreateBlock
// returns. A label the agent already uses is [ErrExists]; an empty or
// invalid label, or a character limit above blocks.MaxCharLimit, is
// [ErrInvalidArgument]; an initial value the schema or the limit refuses
// fails with that error (schema.ErrInvalid, blocks.ErrLimit). Nothing is
// created on an error.
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

// Blocks lists the agent's own blocks: Core first, then Working, Log and
// Archival, each type in creation order. It reads the stored metadata and
// renderings and loads no document; with Options.WriteBack, this Store's
// unflushed edits show in the renderings.
func (a *Agent) Blocks(ctx context.Context) ([]BlockMeta, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.blocksOf(ctx, a.id)
}

// BlocksOfType lists the agent's own blocks of type t, in creation order,
// as [Agent.Blocks] lists them. A t that is not a block type fails with an
// error wrapping blocks.ErrUnknownName.
func (a *Agent) BlocksOfType(ctx context.Context, t blocks.Type) ([]BlockMeta, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.listBlocksByType(ctx, a.id, t)
}

// SharedBlocks lists the blocks other agents shared with the agent, by
// type as [Agent.Blocks] orders them, then in the order they were shared.
// Each carries the share's permission (Permission), the owner
// (SharedFrom) and when it was shared; its handle is
// Shared(m.SharedFrom, m.Label).
func (a *Agent) SharedBlocks(ctx context.Context) ([]SharedBlock, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.listSharedBlocks(ctx, a.id)
}

// BlocksStamp fingerprints what [Agent.Blocks] and [Agent.SharedBlocks]
// would return: two stamps are equal only if both listings are (see
// [BlocksStamp] for what changes it). It is one indexed query, with no
// listing and no document load, and on SQLite not even that while nothing
// was committed since the agent's last stamp, so a cache of the listings
// can check it on every use. Read it before listing, so that
// a change racing with the listing shows in the next stamp.
func (a *Agent) BlocksStamp(ctx context.Context) (BlocksStamp, error) {
	if err := a.check(ctx); err != nil {
		return BlocksStamp{}, err
	}
	return a.s.blocksStamp(ctx, a.id)
}

// Search searches what the agent may see: its own blocks, archival
// entries and messages, and the blocks shared with it; never another
// agent's content. Results come best first. nil opts means the defaults
// of [search.Options] (automatic mode, every content type,
// search.DefaultLimit results, superseded archival entries left out). A
// query with no letters or digits fails with an error wrapping
// search.ErrInvalidQuery.
func (a *Agent) Search(ctx context.Context, query string, opts *search.Options) ([]search.Result, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.search(ctx, a.id, query, opts)
}

// Proposals lists the proposals on the agent's own blocks and on its
// archival memory (consolidation's merges, with Proposal.Merge set),
// pending and decided, oldest first. [Block.Proposals] narrows to one
// block.
func (a *Agent) Proposals(ctx context.Context) ([]Proposal, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	return a.s.listProposals(ctx, a.id, "")
}

// ApproveProposal approves pending proposal id with the agent as the
// approver and applies it, in one transaction: either both happen or
// neither. The agent may decide proposals on its own blocks and archival
// memory and on blocks shared with it at Admin; any other is an error
// matching blocks.ErrPermission. A handle whose id is [HumanApprover] and
// a name ("human:NAME") acts as a person, who may decide any proposal:
// the application is trusted to make one only for whoever actually
// decided (the CLI and the web UI do; the memory tools never do).
//
// The edit is applied as a change by the proposer, checked against the
// proposer's current permission on the block with its need for approval
// met: read-only fields and sections, Append and ReadOnly still bind it,
// and an edit that no longer applies fails with that error and stays
// pending. An unknown id, or a proposal whose proposer can no longer see
// the block, is [ErrNotFound]; one already decided (or withdrawn when its
// share was revoked) is [ErrInvalidArgument].
func (a *Agent) ApproveProposal(ctx context.Context, id int64) error {
	if err := a.check(ctx); err != nil {
		return err
	}
	return a.s.approveProposal(ctx, id, a.id)
}

// RejectProposal marks pending proposal id rejected, with reason (the
// proposer can read it), the agent as the approver; nothing else changes.
// Who may, and the errors for an unknown or decided proposal, are as for
// [Agent.ApproveProposal].
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

// Insert stores entry e and returns it with its ID and times set
// (ValidFrom defaults to the creation time). It is indexed for full-text
// search when Insert returns and, with an embedder, for vector search in
// the same transaction (the embedding is computed before it). Unless the
// store keeps duplicates (Options.KeepDuplicates), an entry whose
// normalised content and conversation equal a live entry's is not stored
// again: Insert returns that entry, with e's tags and metadata merged in
// and Duplicate set. An entry past a per-entry cap
// (Options.MaxArchivalBytes, MaxMetadataBytes, MaxTags, MaxTagBytes) fails
// with [ErrTooLarge], one that would take the agent past
// Options.AgentQuotaBytes with [ErrQuota]; nothing is stored then.
func (r *Archival) Insert(ctx context.Context, e ArchivalEntry) (ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return ArchivalEntry{}, err
	}
	return r.a.s.addArchival(ctx, r.a.id, e)
}

// InsertBatch stores many entries as [Archival.Insert] stores one, in
// transactions of opts.Size entries (nil opts: the defaults of
// [BatchOptions]), and returns the stored entries with their IDs, in
// order. Every entry is checked before anything is written: one bad entry
// (past a cap, say) fails the call with an [*EntryError] naming it and
// writes nothing, and so does a batch that would take the agent past its
// quota by the usage read before the first transaction. Each slice is
// embedded outside its transaction, which checks the quota again. When a
// later transaction fails (or ctx ends, or another writer took the
// quota's room meanwhile), the entries of the transactions already
// committed stay stored and are returned with the error: len(result) says
// how many.
func (r *Archival) InsertBatch(ctx context.Context, entries []ArchivalEntry, opts *BatchOptions) ([]ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return nil, err
	}
	return r.a.s.insertArchivalBatch(ctx, r.a.id, entries, opts)
}

// Get returns the agent's entry id, superseded or not. An id that is not
// one of the agent's entries (another agent's, deleted, never made) is
// [ErrNotFound].
func (r *Archival) Get(ctx context.Context, id int64) (ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return ArchivalEntry{}, err
	}
	return r.a.s.getArchival(ctx, r.a.id, id)
}

// List returns the agent's entries, newest first, filtered and paged by q
// (nil q: the defaults of [ArchivalQuery], the newest page of live
// entries). Superseded entries are left out unless q.IncludeSuperseded. A
// negative limit or offset, or a metadata filter that cannot be applied,
// is [ErrInvalidArgument].
func (r *Archival) List(ctx context.Context, q *ArchivalQuery) ([]ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return nil, err
	}
	return r.a.s.listArchival(ctx, r.a.id, q)
}

// Supersede stores e as the new version of the agent's entry oldID, as
// [Archival.Insert] stores an entry (caps and quota alike), and retires
// the old one in the same transaction: it gets a valid-to time and a link
// to the new one (SupersededBy), and listings and searches leave it out
// unless asked for superseded entries. An oldID that is not a live entry
// of the agent (unknown, deleted, superseded already) is [ErrNotFound],
// one not positive [ErrInvalidArgument]; nothing is stored then.
func (r *Archival) Supersede(ctx context.Context, oldID int64, e ArchivalEntry) (ArchivalEntry, error) {
	if err := r.a.check(ctx); err != nil {
		return ArchivalEntry{}, err
	}
	return r.a.s.supersedeArchival(ctx, r.a.id, oldID, e)
}

// Delete deletes the agent's entry id, with its full-text and vector index
// rows; what it counted toward Options.AgentQuotaBytes is free again. A
// pending merge proposal naming the entry is withdrawn with it (a later
// entry may take its id). An id that is not one of the agent's entries is
// [ErrNotFound].
func (r *Archival) Delete(ctx context.Context, id int64) error {
	if err := r.a.check(ctx); err != nil {
		return err
	}
	return r.a.s.deleteArchival(ctx, r.a.id, id)
}

// Search searches the agent's archival entries only, as [Agent.Search]
// searches everything it sees: opts apply (nil: the defaults) with the
// content types narrowed to archival entries, on a copy, so the caller's
// opts are unchanged.
func (r *Archival) Search(ctx context.Context, query string, opts *search.Options) ([]search.Result, error) {
	if err := r.a.check(ctx); err != nil {
		return nil, err
	}
	return r.a.s.searchArchival(ctx, r.a.id, query, opts)
}

// Messages is one agent's conversation (from [Agent.Messages]): messages,
// batches and summaries.
type Messages struct{ a *Agent }

// Append stores msg in its batch (msg.BatchID, required; the batch is made
// on first use) and returns it with ID, Seq (the next in the batch when
// msg.Seq is 0) and CreatedAt (when zero) set. The message is durable and
// searchable when Append returns. A batch marked complete takes no more
// messages and an unknown role or a negative Seq is [ErrInvalidArgument];
// a Seq the batch already holds is [ErrExists]. A message past
// Options.MaxMessageBytes fails with [ErrTooLarge], one that would take
// the agent past Options.AgentQuotaBytes with [ErrQuota]; nothing is
// stored then.
func (m *Messages) Append(ctx context.Context, msg Message) (Message, error) {
	if err := m.a.check(ctx); err != nil {
		return Message{}, err
	}
	return m.a.s.appendMessage(ctx, m.a.id, msg)
}

// AppendMany stores msgs in one transaction, all or none, each as
// [Messages.Append] stores one: a turn's user message, tool calls and
// results, and the answer cost one commit. Every message is checked
// before anything is written (an error names the message by its index);
// their embeddings are computed in one call outside the transaction, and
// messages with Seq 0 get the next seqs of their batch in order. It
// returns the stored messages, in order.
func (m *Messages) AppendMany(ctx context.Context, msgs []Message) ([]Message, error) {
	if err := m.a.check(ctx); err != nil {
		return nil, err
	}
	return m.a.s.addMessages(ctx, m.a.id, msgs)
}

// List returns the agent's messages in append order (by ID), filtered by
// q: after an ID, one batch, a time range, and at most q.Limit of them
// (with q.Newest the newest ones, still oldest first). nil q means every
// message. A negative limit is [ErrInvalidArgument].
func (m *Messages) List(ctx context.Context, q *MessageQuery) ([]Message, error) {
	if err := m.a.check(ctx); err != nil {
		return nil, err
	}
	return m.a.s.messages(ctx, m.a.id, q)
}

// CompleteBatch marks the agent's batch batchID complete: it takes no
// more messages, and its messages may now be compressed. Completing a
// complete batch again is not an error; an unknown batch is
// [ErrNotFound].
func (m *Messages) CompleteBatch(ctx context.Context, batchID string) error {
	if err := m.a.check(ctx); err != nil {
		return err
	}
	return m.a.s.completeBatch(ctx, m.a.id, batchID)
}

// Batches lists the agent's batches, complete or not, in creation order.
func (m *Messages) Batches(ctx context.Context) ([]Batch, error) {
	if err := m.a.check(ctx); err != nil {
		return nil, err
	}
	return m.a.s.batches(ctx, m.a.id)
}

// SaveSummary stores s as the summary of the agent's messages
// s.FirstMessageID to s.LastMessageID (folding in the summary before it,
// s.PreviousID, when set) and returns it with ID and CreatedAt (when
// zero) set. A range that is empty or starts below 1 is
// [ErrInvalidArgument].
func (m *Messages) SaveSummary(ctx context.Context, s Summary) (Summary, error) {
	if err := m.a.check(ctx); err != nil {
		return Summary{}, err
	}
	return m.a.s.saveSummary(ctx, m.a.id, s)
}

// LatestSummary returns the agent's summary that reaches furthest into
// its messages (the highest LastMessageID; of those, the last saved), or
// an error wrapping [ErrNotFound] when it has none.
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
// to the Store, and an empty label lists every block in listProposals.
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

// Doc returns the agent's live view of the block: a [blocks.Document]
// that reads the block's current state and writes as the agent, at its
// effective permission (the owner's own, or the share's). Writes through
// it are checked and persisted as [Block.Apply]'s are: durable when they
// return, or, with Options.WriteBack, on Flush or [Block.Persist]. Doc
// loads the block's document.
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
// the rendering stored with its last persisted change (no document load;
// with Options.WriteBack, this Store's unflushed edits show); a shared
// block's from the shared view, since the stored rendering has no share
// check of its own.
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

// Apply applies edit e to the block as the agent, checked against its
// permission, the block's schema (read-only fields and sections included)
// and its character limit; the change is durable when Apply returns
// (with Options.WriteBack, on Flush or [Block.Persist]). A replace_text
// edit whose old text does not occur changes nothing and returns an error
// wrapping [ErrNoMatch]. At Partner or Human permission, an edit the
// store's approver (Options.Approver) does not allow is kept as a
// proposal and the error is a [*ProposalError]; an edit that could not
// apply even if approved is not kept, and the error is an
// [*InapplicableEditError] saying why (as [Block.Propose] refuses it). The same edit made through [Block.Doc]'s
// document ends the same way: same error, value, stored change and
// proposal.
func (b *Block) Apply(ctx context.Context, e Edit) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	return b.s.applyEdit(ctx, b.agent, b.owner, b.label, e)
}

// SetText replaces a Text block's content with text: [Block.Apply] with a
// blocks.OpSetText edit, with its checks and errors.
func (b *Block) SetText(ctx context.Context, text string) error {
	return b.Apply(ctx, Edit{Op: blocks.OpSetText, Text: text})
}

// Append appends text to a Text block: [Block.Apply] with a
// blocks.OpAppendText edit, with its checks and errors. A share at Append
// permission allows it.
func (b *Block) Append(ctx context.Context, text string) error {
	return b.Apply(ctx, Edit{Op: blocks.OpAppendText, Text: text})
}

// Replace replaces the first occurrence of old with new in a Text block
// ([Block.Apply] with a blocks.OpReplaceText edit) and reports whether old
// occurred. When it does not, nothing changes and the error wraps
// [ErrNoMatch], as on every write path; found is err == nil.
func (b *Block) Replace(ctx context.Context, old, new string) (bool, error) {
	err := b.Apply(ctx, Edit{Op: blocks.OpReplaceText, Old: old, Text: new})
	return err == nil, err
}

// Merge merges automerge changes made outside the store (by automerge JS
// or another automerge peer, or on a Fork of the block) into the block,
// as the agent. It is the one supported way: LoadIncremental, Merge and
// sync messages on a [blocks.Document] of the store (from [Block.Doc])
// fail with blocks.ErrManaged. data is change chunks (SaveIncremental,
// PendingChanges) or a whole saved document.
//
// The merge is judged inside the write transaction against the block's
// fresh state, as any edit is, at the handle's current permission: every
// change applicable, the merged value valid under the schema (no key or
// value kind the schema does not lay out, such as an unknown root key),
// read-only fields and sections unchanged, the character limit kept. At
// Append only changes that append come in (text extended, items and log
// entries added at the end, counters raised); ReadWrite and Admin may
// merge any content change; ReadOnly, Partner and Human cannot merge (a
// merge cannot be proposed for approval). A refused merge returns an
// error wrapping blocks.ErrCorrupt, schema.ErrInvalid, blocks.ErrPermission
// or blocks.ErrLimit and leaves the block as it was. Changes made on an
// earlier epoch of the block (before [Block.Rebase], or compaction past
// Options.HistoryLimit, started a new one) are refused, wrapping
// blocks.ErrUnrelated or blocks.ErrCorrupt with a message naming the
// epoch, since merging them would duplicate content: the peer reloads the
// current document and edits again.
//
// The merge is persisted as one stored change and indexed like any write.
// [Block.History] shows each merged change as made by the agent, with op
// merge, whatever the change's commit message says (nothing, as a JS
// peer's, or a name in engram's format, which a peer can forge); the
// message is kept only as the change's PeerMessage. The record of who
// merged which change is written in the merge's transaction and holds
// across compactions, epochs, processes and Export/Import.
func (b *Block) Merge(ctx context.Context, data []byte) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	return b.s.mergeChanges(ctx, b.agent, b.owner, b.label, data)
}

// History lists the block's changes, oldest first, across every epoch:
// each [blocks.Change] carries its epoch, and each epoch after the first
// starts with the system's OpRebase change. A change merged from outside
// the store ([Block.Merge]) is attributed to the agent that merged it,
// with op merge, whatever its commit message says (kept as PeerMessage).
func (b *Block) History(ctx context.Context) ([]blocks.Change, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return b.s.blockHistory(ctx, b.agent, b.owner, b.label)
}

// At returns a read-only view of the block as of heads (change hashes
// from [Block.History]), in whichever epoch holds them. Writes to it fail
// with blocks.ErrHistorical; heads no epoch holds fail with an error
// wrapping blocks.ErrOutOfRange.
func (b *Block) At(ctx context.Context, heads []string) (*blocks.Document, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return b.s.blockAt(ctx, b.agent, b.owner, b.label, heads)
}

// Propose records edit e, with reason, for the block's approver to decide
// later ([Agent.ApproveProposal], [Agent.RejectProposal]) and returns the
// pending proposal. The agent must see the block ([ErrNotFound]
// otherwise), at any permission but ReadOnly (blocks.ErrPermission). The
// edit is first tried on a private copy of the block as approval would
// apply it (as a ReadWrite write, so read-only fields and sections still
// bind it); an edit that could not apply is refused with an
// [*InapplicableEditError] wrapping why ([ErrNoMatch], schema.ErrInvalid,
// blocks.ErrLimit, blocks.ErrWrongSchema, blocks.ErrPermission, ...) and
// nothing is stored. A proposal past Options.MaxProposalBytes is
// [ErrTooLarge]; one past Options.MaxPendingProposals pending, or past
// the agent's quota with its pending proposals counted, is [ErrQuota].
func (b *Block) Propose(ctx context.Context, e Edit, reason string) (Proposal, error) {
	if err := b.check(ctx); err != nil {
		return Proposal{}, err
	}
	return b.s.proposeEdit(ctx, b.agent, b.owner, b.label, e, reason)
}

// Proposals lists proposals on the block, pending and decided, oldest
// first: all of them for the owner; for a sharee only its own, since the
// others' edits and reasons are theirs and the owner's. A missing block
// is [ErrNotFound], as for every other method.
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

// Share shares the block with agent with at permission perm; sharing
// again changes the permission. The sharee edits the same document, its
// writes checked against perm, and finds the block in
// [Agent.SharedBlocks] with SharedFrom set to the owner. An empty with,
// the owner itself or an invalid perm is [ErrInvalidArgument]. Owner only.
func (b *Block) Share(ctx context.Context, with string, perm blocks.Permission) error {
	if err := b.ownerOnly(ctx, "share"); err != nil {
		return err
	}
	return b.s.shareBlock(ctx, b.owner, b.label, with, perm)
}

// Unshare revokes the share with agent with; that agent's pending
// proposals on the block are withdrawn with it. A block not shared with
// it is [ErrNotFound]. Owner only.
func (b *Block) Unshare(ctx context.Context, with string) error {
	if err := b.ownerOnly(ctx, "unshare"); err != nil {
		return err
	}
	if strings.TrimSpace(with) == "" {
		return invalidArg("agent %q: unshare block %q: the agent to unshare from is empty", b.agent, b.label)
	}
	return b.s.unshareBlock(ctx, b.owner, b.label, with)
}

// Delete deletes the block and its shares. The owner's own permission on
// the block ([BlockSpec].Permission) must be Admin: at anything less it is
// an error matching blocks.ErrPermission (the system deletes any block
// with [Admin.DeleteBlock]). Owner only.
func (b *Block) Delete(ctx context.Context) error {
	if err := b.ownerOnly(ctx, "delete"); err != nil {
		return err
	}
	return b.s.deleteBlock(ctx, b.owner, b.label)
}

// SetPinned pins or unpins the block. Pinning only decides whether a
// Working block is in context, so it needs the owner's permission to be
// ReadWrite or above, not Admin. Owner only.
func (b *Block) SetPinned(ctx context.Context, pinned bool) error {
	if err := b.ownerOnly(ctx, "pin or unpin"); err != nil {
		return err
	}
	return b.s.setBlockPinned(ctx, b.owner, b.label, pinned)
}

// SetType changes the block's type; an unknown type is an error wrapping
// blocks.ErrUnknownName. The owner's own permission on the block must be
// Admin (blocks.ErrPermission otherwise). Owner only.
func (b *Block) SetType(ctx context.Context, t blocks.Type) error {
	if err := b.ownerOnly(ctx, "change the type of"); err != nil {
		return err
	}
	return b.s.setBlockType(ctx, b.owner, b.label, t)
}

// SetSchema changes the block's schema within its kind (a schema of
// another kind is blocks.ErrWrongSchema); the current content must be
// valid under the new schema (schema.ErrInvalid otherwise). The owner's
// own permission on the block must be Admin (blocks.ErrPermission
// otherwise). Owner only.
func (b *Block) SetSchema(ctx context.Context, s schema.Schema) error {
	if err := b.ownerOnly(ctx, "change the schema of"); err != nil {
		return err
	}
	return b.s.updateBlockSchema(ctx, b.owner, b.label, s)
}

// SetPermission changes the owner's own permission on the block; a
// share's permission is changed by sharing again. The owner's permission
// must be Admin to change it (blocks.ErrPermission otherwise), so a block
// set below Admin stays so unless the system raises it
// ([Admin.SetBlockPermission]); an invalid permission is
// [ErrInvalidArgument]. Owner only.
func (b *Block) SetPermission(ctx context.Context, p blocks.Permission) error {
	if err := b.ownerOnly(ctx, "change the permission of"); err != nil {
		return err
	}
	return b.s.setBlockPermission(ctx, b.owner, b.label, p)
}

// Persist makes the block's pending changes durable now. Only
// Options.WriteBack leaves any: in write-through mode every change is
// durable when its write returns, and Persist does nothing. A sharee may
// persist too: it writes what is already in the shared document and
// reveals or changes nothing else.
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

// Compact folds the block's stored changes into its snapshot now, as the
// store does on its own past Options.CompactAfter of them (edits still
// pending with Options.WriteBack are written first); the value and the
// history are unchanged. Owner only.
func (b *Block) Compact(ctx context.Context) error {
	if err := b.ownerOnly(ctx, "compact"); err != nil {
		return err
	}
	return b.s.compactBlock(ctx, b.owner, b.label)
}

// Rebase starts a new epoch of the block's history now, whatever its size
// (compaction does so on its own past Options.HistoryLimit). The block's
// value, rendering and permissions are unchanged; its history so far is
// archived, and [Block.History] and [Block.At] still read it. Edits still
// pending with Options.WriteBack are written first; other writers switch
// to the new epoch on their next access. Owner only.
func (b *Block) Rebase(ctx context.Context) error {
	if err := b.ownerOnly(ctx, "rebase"); err != nil {
		return err
	}
	return b.s.rebaseBlock(ctx, b.owner, b.label)
}

// StorageUsed is what the agent's archival entries and messages count
// toward Options.AgentQuotaBytes, in bytes, kept whether or not a quota is
// set: each entry's content, metadata and tags (stored four ways, and
// counted so), each message's content, name, tool call id and tool calls,
// and [UsageRowBytes] per row. Superseded entries count until deleted. It
// reads one row.
func (a *Agent) StorageUsed(ctx context.Context) (int64, error) {
	if err := a.check(ctx); err != nil {
		return 0, err
	}
	return a.s.storageUsed(ctx, a.id)
}

// ContextLibrary returns the agent's context library (the artifacts the
// builder keeps in its system prompt, see [LibraryEntry]) in first-seen
// order.
func (a *Agent) ContextLibrary(ctx context.Context) ([]LibraryEntry, error) {
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	c := a.s
	return c.contextLibrary(ctx, a.id)
}

// PutContextLibrary adds entries to the agent's context library in one
// transaction: a new ID is appended, an existing one keeps its position
// and takes the new kind, title and content (last write wins). Every entry
// is checked first; a bad one (an empty or over-long ID, text that is not
// valid UTF-8 or holds NUL bytes) fails the call with [ErrInvalidArgument]
// and stores nothing.
func (a *Agent) PutContextLibrary(ctx context.Context, entries []LibraryEntry) error {
	if err := a.check(ctx); err != nil {
		return err
	}
	c := a.s
	return c.putContextLibrary(ctx, a.id, entries)
}

// RemoveFromContextLibrary deletes the artifacts ids from the agent's
// context library; no ids means all of them. Unknown ids are ignored.
func (a *Agent) RemoveFromContextLibrary(ctx context.Context, ids ...string) error {
	if err := a.check(ctx); err != nil {
		return err
	}
	c := a.s
	return c.removeFromContextLibrary(ctx, a.id, ids...)
}

// DocumentBlock returns the handle of the block whose current epoch has
// automerge document id, if the agent may read it: its own block's
// handle, or the Shared one. A document that does not exist, belongs to
// an earlier epoch or a deleted block, or is a block the agent may not
// read all give the same [ErrNotFound], so an id tells nothing about
// blocks the agent cannot see.
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
// epoch (what [Agent.DocumentBlock] resolves), made on first use. A block
// the agent cannot read is [ErrNotFound].
func (b *Block) DocumentID(ctx context.Context) (DocumentID, error) {
	if err := b.check(ctx); err != nil {
		return DocumentID{}, err
	}
	c := b.s
	return c.documentID(ctx, b.agent, b.owner, b.label)
}

// MergeAs is [Block.Merge] with the merge recorded (in the block's history
// and its stored change) as made by as instead of the agent: a name the
// caller vouches for, such as "human:NAME" for a person on whose behalf
// the agent merges (engram serve's web UI records a restore so). The
// handle's permission is the one checked; as with Merge, the changes'
// commit messages name no one.
func (b *Block) MergeAs(ctx context.Context, data []byte, as string) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	c := b.s
	return c.mergeChangesAs(ctx, b.agent, b.owner, b.label, data, as)
}
