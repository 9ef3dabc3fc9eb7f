package memory

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/unixnanos"
	"github.com/engram-go/engram/schema"
)

// DumpVersion is the format version Export writes. Version 2 added
// proposals, the context library and the embedder record, version 3
// agent profiles, version 4 the proposals on archival memory
// (consolidation's merge_archival, whose source ids Import renumbers),
// version 5 the places of merged archival entries in their conversations
// (ArchivalPlaces); Import reads versions 1 to 5.
const DumpVersion = 5

// Dump is a lossless, JSON-serialisable copy of a store (or one agent's
// part of it): every block with its whole automerge document (so CRDT
// history survives), shares, proposals (pending and decided), archival
// entries (with supersession links), messages, batches, summaries, the
// context library, agent profiles and the embedder record.
//
// Left out, because the store derives them from the rest: the full-text
// and vector indexes and their queues (rebuilt by Import's triggers and
// by Reembed: vectors are not in a dump), token counts (a cache,
// recomputed on use), the per-agent change counters (BlocksStamp) and the
// stored renderings and heads (recomputed from the documents). Ids of
// archival entries, messages, summaries and proposals, and the block
// rows' own ids, are renumbered by Import (the target may hold rows of
// its own); a block's update rows are folded into its document.
type Dump struct {
	Version   int             `json:"version"`
	Blocks    []DumpBlock     `json:"blocks"`
	Shares    []DumpShare     `json:"shares,omitempty"`
	Proposals []DumpProposal  `json:"proposals,omitempty"`
	Archival  []ArchivalEntry `json:"archival,omitempty"`
	Messages  []Message       `json:"messages,omitempty"`
	Batches   []Batch         `json:"batches,omitempty"`
	Summaries []Summary       `json:"summaries,omitempty"`
	Library   []DumpArtifact  `json:"library,omitempty"`
	Profiles  []DumpProfile   `json:"profiles,omitempty"`
	// ArchivalPlaces are the archival entries placed in their
	// conversation other than by their id: consolidation puts a merged
	// entry where its first source was, so that it has that source's
	// neighbours. Import renumbers both ids with the entries.
	ArchivalPlaces []DumpArchivalPlace `json:"archival_places,omitempty"`
	// Embedder is the embedder the store's vectors were made with (nil:
	// none recorded). Import does not record it (the vectors are not in
	// the dump): it reports it (ImportReport.Embedder) so that the caller
	// can open the store with that embedder, which embeds the imported
	// content and records it, as the CLI's import does.
	Embedder *DumpEmbedder `json:"embedder,omitempty"`
}

// DumpProposal is one proposal in the dump, pending or decided: on a
// block (Label), or on the owner's archival memory (Label "", Op
// OpMergeArchival, Args an ArchivalMerge whose Sources are the dump's
// archival ids, renumbered by Import with the entries).
type DumpProposal struct {
	ID        int64           `json:"id"` // the source store's; Import renumbers
	Owner     string          `json:"owner"`
	Label     string          `json:"label"`
	Proposer  string          `json:"proposer"`
	Op        string          `json:"op"`
	Args      json.RawMessage `json:"args"` // the Edit (or the ArchivalMerge), as stored
	Reason    string          `json:"reason,omitempty"`
	Status    string          `json:"status"`
	CreatedAt int64           `json:"created_at"`           // Unix nanoseconds
	DecidedAt int64           `json:"decided_at,omitempty"` // Unix nanoseconds; 0: undecided
	DecidedBy string          `json:"decided_by,omitempty"`
}

// DumpArtifact is one entry of an agent's context library, in first-seen
// order within the agent.
type DumpArtifact struct {
	Agent       string `json:"agent"`
	ID          string `json:"id"`
	Kind        string `json:"kind,omitempty"`
	Title       string `json:"title,omitempty"`
	Content     string `json:"content"`
	Recoverable bool   `json:"recoverable,omitempty"`
	UpdatedAt   int64  `json:"updated_at"` // Unix nanoseconds
}

// DumpProfile is one agent's profile.
type DumpProfile struct {
	Agent   string  `json:"agent"`
	Profile Profile `json:"profile"`
}

// DumpArchivalPlace is an archival entry's place in its conversation
// (the entries of a conversation are in place order, a place being an
// entry's id unless one is given here): Place is the id of the entry it
// stands with, the entry itself standing after it when numbered above it
// (a merged entry always is), before it otherwise.
type DumpArchivalPlace struct {
	ID    int64 `json:"id"`
	Place int64 `json:"place"`
}

// DumpEmbedder is the recorded embedder: its Name and Dimensions.
type DumpEmbedder struct {
	Name       string `json:"name"`
	Dimensions int    `json:"dimensions"`
}

// DumpBlock is one block: metadata plus its automerge document (Save form).
type DumpBlock struct {
	Owner       string            `json:"owner"`
	Label       string            `json:"label"`
	Description string            `json:"description,omitempty"`
	Type        blocks.Type       `json:"type"`
	Permission  blocks.Permission `json:"permission"`
	Schema      json.RawMessage   `json:"schema"`
	CharLimit   int               `json:"char_limit"`
	Pinned      bool              `json:"pinned,omitempty"`
	Priority    int               `json:"priority,omitempty"`
	Document    []byte            `json:"document"` // base64 in JSON
	// Heads are the document's heads when it was exported: Import takes
	// the changes they cover as the block's own history and judges every
	// other one as a change made outside the store (blocks.LoadExported).
	// A dump without them is judged by commit messages (blocks.LoadForeign).
	Heads    []string `json:"heads,omitempty"`
	Rendered string   `json:"rendered"`
	// Epochs are the documents of the block's archived epochs, oldest
	// first (see Options.HistoryLimit): Document is the current epoch.
	Epochs [][]byte `json:"epochs,omitempty"`
	// EpochHeads are the heads of each of Epochs when exported. Archived
	// history is immutable: Import refuses an epoch whose heads differ
	// (blocks.ErrPermission). A dump without them is not checked.
	EpochHeads [][]string `json:"epoch_heads,omitempty"`
	// CreatedAt and UpdatedAt are the block row's times (Unix
	// nanoseconds); 0 (a version 1 dump): Import's time.
	CreatedAt int64 `json:"created_at,omitempty"`
	UpdatedAt int64 `json:"updated_at,omitempty"`
	// MergedBy names, by change hash (hex), the agent that merged each
	// change of Document and Epochs that came from outside the store
	// (Block.Merge): the block's history attributes those changes to it,
	// not to what their commit messages say. Import records them, and
	// records the changes Document holds beyond Heads (edits made to the
	// dump after the export, which it judges as a merge by the block's
	// owner) as merged by the owner.
	MergedBy map[string]string `json:"merged_by,omitempty"`
}

// DumpShare is one share.
type DumpShare struct {
	Owner      string            `json:"owner"`
	Label      string            `json:"label"`
	Agent      string            `json:"agent"`
	Permission blocks.Permission `json:"permission"`
	CreatedAt  int64             `json:"created_at,omitempty"` // Unix nanoseconds; 0: Import's time
}

// Export copies the whole store's content, every agent's, into a [Dump]
// that [Store.Import] takes back. Pending write-back edits are flushed
// first. [Agent.Export] copies one agent's.
func (c *Store) Export(ctx context.Context) (*Dump, error) {
	return c.export(ctx, "")
}

// export implements [Store.Export] (agent "") and [Agent.Export].
func (c *Store) export(ctx context.Context, agent string) (*Dump, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	if err := c.Flush(ctx); err != nil {
		return nil, err
	}
	d := &Dump{Version: DumpVersion}
	owners, err := c.owners(ctx, agent)
	if err != nil {
		return nil, err
	}
	for _, owner := range owners {
		metas, err := c.blocksOf(ctx, owner)
		if err != nil {
			return nil, err
		}
		for _, m := range metas {
			e, doc, err := c.view(ctx, owner, "", m.Label)
			if err != nil {
				return nil, err
			}
			// The document and its epoch number together: archives of
			// later epochs (a rebase meanwhile) are not this dump's.
			e.lock()
			_, epoch, _, _ := e.freshness()
			data, err := doc.Save()
			heads := doc.Heads()
			e.unlock()
			if err != nil {
				return nil, err
			}
			sj, err := schema.Marshal(m.Schema)
			if err != nil {
				return nil, err
			}
			var (
				epochs     [][]byte
				epochHeads [][]string
				headsOK    = true
			)
			info := blocks.Info{Label: m.Label, Type: m.Type, Schema: m.Schema, Permission: m.Permission, CharLimit: m.CharLimit, Owner: owner}
			err = c.archives(ctx, m.ID, epoch, false, func(ep int64, snap []byte) (bool, error) {
				epochs = append(epochs, snap)
				if ed, err := blocks.Load(info, snap, nil); err == nil && headsOK {
					epochHeads = append(epochHeads, ed.Heads())
				} else {
					headsOK = false // Import reads it as Load does, and says what is wrong
				}
				return true, nil
			})
			if !headsOK {
				epochHeads = nil
			}
			if err != nil {
				return nil, err
			}
			mergedBy, err := c.mergedBy(ctx, m.ID)
			if err != nil {
				return nil, fmt.Errorf("memory: export block %q of %q: who merged its changes: %w", m.Label, owner, err)
			}
			d.Blocks = append(d.Blocks, DumpBlock{Owner: owner, Label: m.Label, Description: m.Description, Type: m.Type,
				Permission: m.Permission, Schema: sj, CharLimit: m.CharLimit, Pinned: m.Pinned, Priority: m.Priority,
				Document: data, Heads: heads, Rendered: doc.Render(), Epochs: epochs, EpochHeads: epochHeads,
				CreatedAt: m.CreatedAt.UnixNano(), UpdatedAt: m.UpdatedAt.UnixNano(), MergedBy: mergedBy})
		}
		rows, err := c.rdb.QueryContext(ctx, `SELECT b.label, s.agent, s.permission, s.created_at FROM shares s JOIN blocks b ON b.id = s.block_id
			WHERE b.owner = ? ORDER BY b.id, s.agent`, owner)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			sh := DumpShare{Owner: owner}
			var p string
			if err := rows.Scan(&sh.Label, &sh.Agent, &p, unixnanos.Scanner{N: &sh.CreatedAt}); err != nil {
				rows.Close()
				return nil, err
			}
			if sh.Permission, err = blocks.ParsePermission(p); err != nil {
				rows.Close()
				return nil, err
			}
			d.Shares = append(d.Shares, sh)
		}
		rows.Close()
		arch, err := c.listArchival(ctx, owner, &ArchivalQuery{IncludeSuperseded: true, Limit: 1 << 30})
		if err != nil {
			return nil, err
		}
		// Oldest first, so supersession targets come before their links.
		for i := len(arch) - 1; i >= 0; i-- {
			d.Archival = append(d.Archival, arch[i])
		}
		if d.ArchivalPlaces, err = c.archivalPlaces(ctx, owner, d.ArchivalPlaces); err != nil {
			return nil, err
		}
		msgs, err := c.messages(ctx, owner, nil)
		if err != nil {
			return nil, err
		}
		d.Messages = append(d.Messages, msgs...)
		bs, err := c.batches(ctx, owner)
		if err != nil {
			return nil, err
		}
		d.Batches = append(d.Batches, bs...)
		srows, err := c.rdb.QueryContext(ctx, `SELECT id, first_message_id, last_message_id, COALESCE(previous_id, 0), content, model, created_at
			FROM summaries WHERE agent = ? ORDER BY id`, owner)
		if err != nil {
			return nil, err
		}
		for srows.Next() {
			s := Summary{Agent: owner}
			var created int64
			if err := srows.Scan(&s.ID, &s.FirstMessageID, &s.LastMessageID, &s.PreviousID, &s.Content, &s.Model, unixnanos.Scanner{N: &created}); err != nil {
				srows.Close()
				return nil, err
			}
			s.CreatedAt = fromNanos(created)
			d.Summaries = append(d.Summaries, s)
		}
		srows.Close()
		if err := c.exportProposals(ctx, owner, d); err != nil {
			return nil, err
		}
		lib, err := c.contextLibrary(ctx, owner)
		if err != nil {
			return nil, err
		}
		for _, e := range lib {
			d.Library = append(d.Library, DumpArtifact{Agent: owner, ID: e.ID, Kind: e.Kind, Title: e.Title, Content: e.Content,
				Recoverable: e.Recoverable, UpdatedAt: e.UpdatedAt.UnixNano()})
		}
		if p, err := c.profile(ctx, owner); err == nil {
			d.Profiles = append(d.Profiles, DumpProfile{Agent: owner, Profile: p})
		} else if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	name, dims, err := searchindex.RecordedEmbedder(ctx, c.rdb)
	if err != nil {
		return nil, fmt.Errorf("memory: export: %w", err)
	}
	if name != "" {
		d.Embedder = &DumpEmbedder{Name: name, Dimensions: dims}
	}
	return d, nil
}

// exportProposals adds the proposals on owner's blocks and on owner's
// archival memory to d, oldest first.
func (c *Store) exportProposals(ctx context.Context, owner string, d *Dump) error {
	rows, err := c.rdb.QueryContext(ctx, `SELECT * FROM (SELECT p.id, b.label, p.proposer, p.op, p.args_json, p.reason, p.status, p.created_at,
		COALESCE(p.decided_at, 0), COALESCE(p.decided_by, '') FROM proposals p JOIN blocks b ON b.id = p.block_id
		WHERE b.owner = ?
		UNION ALL SELECT p.id, '', p.proposer, p.op, p.args_json, p.reason, p.status, p.created_at,
		COALESCE(p.decided_at, 0), COALESCE(p.decided_by, '') FROM proposals p
		WHERE p.block_id IS NULL AND p.proposer = ?) u ORDER BY id`, owner, owner)
	if err != nil {
		return fmt.Errorf("memory: export proposals of %q: %w", owner, err)
	}
	defer rows.Close()
	for rows.Next() {
		p := DumpProposal{Owner: owner}
		var args string
		if err := rows.Scan(&p.ID, &p.Label, &p.Proposer, &p.Op, &args, &p.Reason, &p.Status, unixnanos.Scanner{N: &p.CreatedAt}, unixnanos.Scanner{N: &p.DecidedAt}, &p.DecidedBy); err != nil {
			return fmt.Errorf("memory: export proposals of %q: %w", owner, err)
		}
		p.Args = json.RawMessage(args)
		d.Proposals = append(d.Proposals, p)
	}
	return rows.Err()
}

// owners lists the agents with any content (or just agent).
func (c *Store) owners(ctx context.Context, agent string) ([]string, error) {
	if agent != "" {
		return []string{agent}, nil
	}
	rows, err := c.rdb.QueryContext(ctx, `SELECT owner FROM blocks UNION SELECT agent FROM archival
		UNION SELECT agent FROM messages UNION SELECT agent FROM batches UNION SELECT agent FROM context_library
		UNION SELECT agent FROM agent_profiles ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ImportReport counts what Import added.
type ImportReport struct {
	Blocks, Shares, Archival, Messages, Batches, Summaries int
	Proposals, Library, Profiles                           int
	// Embedder is the dump's embedder record (nil: none). Import does not
	// record it; see Dump.Embedder.
	Embedder *DumpEmbedder
}

// Import adds a Dump's content in one transaction: all or nothing. A block
// whose (owner, label) exists fails the import with ErrExists, as does a
// batch, message sequence number or library artifact the store holds
// (the same dump imported twice). A block
// document is judged as [Block.Merge] judges merged changes (see
// blocks.LoadExported): a document edited after the export (or, for a dump
// without heads, outside engram) that a merge by
// the block's owner could not bring in (an invalid value, an unknown root
// key, a changed read-only field, ...) fails the import with an error
// wrapping schema.ErrInvalid, blocks.ErrPermission or blocks.ErrLimit. Archival,
// message and summary ids are renumbered and their links remapped. An
// archival entry or message past a per-entry cap (Options.MaxArchivalBytes
// and the fields after it) fails the import with ErrTooLarge, naming the
// entry by its place in the dump and its id there, and an agent the
// import would take past Options.AgentQuotaBytes fails it with ErrQuota;
// either way nothing is imported. (A store whose entries are past the
// caps, such as log entries rotated out of a block of a large character
// limit, imports into a store opened with caps as large, or negative.) With an
// embedder set, run Reembed afterwards to index the imported content for
// vector search.
func (c *Store) Import(ctx context.Context, d *Dump) (ImportReport, error) {
	var rep ImportReport
	if err := c.checkOpen(ctx); err != nil {
		return rep, err
	}
	// Imported entries get their dedup keys after the import (the next
	// Open keys whatever this leaves).
	defer c.backfillKeys(context.WithoutCancel(ctx)) //nolint:errcheck
	if d == nil || d.Version < 1 || d.Version > DumpVersion {
		return rep, invalidArg("dump version %v (want 1 to %d)", func() any {
			if d == nil {
				return nil
			}
			return d.Version
		}(), DumpVersion)
	}
	// What each agent's rows add to its usage (Options.AgentQuotaBytes),
	// and each entry's encoding, as stored.
	adds := map[string]int64{}
	archMeta := make([]string, len(d.Archival))
	for i, e := range d.Archival {
		if err := checkAgent(e.Agent); err != nil {
			return rep, fmt.Errorf("memory: import: archival entry %d: %w", i, err)
		}
		if err := c.checkArchivalText(e.Agent, e.Content, e.Tags); err != nil {
			return rep, fmt.Errorf("memory: import: archival entry %d (id %d): %w", i, e.ID, err)
		}
		meta, err := json.Marshal(e.Metadata)
		if err != nil {
			return rep, fmt.Errorf("memory: import: archival entry %d (id %d): %w", i, e.ID, invalidArg("metadata: %v", err))
		}
		if err := c.checkMetadataSize(e.Agent, len(meta)); err != nil {
			return rep, fmt.Errorf("memory: import: archival entry %d (id %d): %w", i, e.ID, err)
		}
		stamps := []time.Time{e.CreatedAt, e.ValidFrom}
		if e.ValidTo != nil {
			stamps = append(stamps, *e.ValidTo)
		}
		for _, t := range stamps {
			if err := checkStamp("time", t); err != nil {
				return rep, fmt.Errorf("memory: import: archival entry %d (id %d): %w", i, e.ID, err)
			}
		}
		archMeta[i] = string(meta)
		tj, _ := json.Marshal(append([]string{}, normTags(e.Tags)...))
		adds[e.Agent] += archivalBytes(e.Content, archMeta[i], string(tj))
	}
	msgCalls := make([]string, len(d.Messages))
	for i, m := range d.Messages {
		if err := checkAgent(m.Agent); err != nil {
			return rep, fmt.Errorf("memory: import: message %d: %w", i, err)
		}
		if !validRole(m.Role) {
			return rep, fmt.Errorf("memory: import: message %d: %w", i, invalidArg("role %q (want system, user, assistant or tool)", m.Role))
		}
		calls := m.ToolCalls
		if calls == nil {
			calls = []ToolCall{}
		}
		cj, err := json.Marshal(calls)
		if err != nil {
			return rep, fmt.Errorf("memory: import: message %d (id %d): %w", i, m.ID, invalidArg("tool calls: %v", err))
		}
		if err := c.checkMessageSize(m.Agent, &m, len(cj)); err != nil {
			return rep, fmt.Errorf("memory: import: message %d (id %d): %w", i, m.ID, err)
		}
		if err := checkStamp("time", m.CreatedAt); err != nil {
			return rep, fmt.Errorf("memory: import: message %d (id %d): %w", i, m.ID, err)
		}
		msgCalls[i] = string(cj)
		adds[m.Agent] += messageBytes(&m, msgCalls[i])
	}
	for i, p := range d.Proposals {
		if err := checkProposal(p); err != nil {
			return rep, fmt.Errorf("memory: import: proposal %d (dump entry %d) on %q of %q: %w", p.ID, i, p.Label, p.Owner, err)
		}
	}
	for i, e := range d.Library {
		if err := checkAgent(e.Agent); err != nil {
			return rep, fmt.Errorf("memory: import: context library entry %d: %w", i, err)
		}
	}
	profiles := make([][]byte, len(d.Profiles))
	for i, p := range d.Profiles {
		if err := checkAgent(p.Agent); err != nil {
			return rep, fmt.Errorf("memory: import: profile %d: %w", i, err)
		}
		data, err := checkProfile(p.Agent, p.Profile)
		if err != nil {
			return rep, fmt.Errorf("memory: import: %w", err)
		}
		profiles[i] = data
	}
	// Validate blocks before touching the database.
	type prepared struct {
		b        DumpBlock
		info     blocks.Info
		rendered string
		heads    string
		epochs   []string // each archived epoch's heads, as block_archive.heads holds them
		mergedBy map[string]string
	}
	var pre []prepared
	for _, b := range d.Blocks {
		s, err := schema.Unmarshal(b.Schema)
		if err != nil {
			return rep, fmt.Errorf("memory: import block %q of %q: %w", b.Label, b.Owner, err)
		}
		info := blocks.Info{Label: b.Label, Description: b.Description, Type: b.Type, Schema: s, Permission: b.Permission,
			CharLimit: b.CharLimit, Owner: b.Owner, Pinned: b.Pinned, Priority: b.Priority}
		// Judged as MergeChanges judges merged changes: a dump's document
		// may have been edited outside engram.
		doc, err := blocks.LoadExported(info, b.Document, b.Heads, nil)
		if err != nil {
			return rep, fmt.Errorf("memory: import: %w", err)
		}
		if len(b.EpochHeads) > 0 && len(b.EpochHeads) != len(b.Epochs) {
			return rep, invalidArg("import block %q of %q: %d archived epochs, %d epoch heads", b.Label, b.Owner, len(b.Epochs), len(b.EpochHeads))
		}
		var epochHeads []string
		for i, ep := range b.Epochs {
			ed, err := blocks.Load(info, ep, nil)
			if err != nil {
				return rep, fmt.Errorf("memory: import block %q of %q: archived epoch %d: %w", b.Label, b.Owner, i, err)
			}
			if len(b.EpochHeads) > 0 && !sameHeads(ed.Heads(), b.EpochHeads[i]) {
				return rep, fmt.Errorf("memory: import block %q of %q: archived epoch %d: %w: it was changed after the export (heads %v, exported with %v); archived history is immutable",
					b.Label, b.Owner, i, blocks.ErrPermission, ed.Heads(), b.EpochHeads[i])
			}
			epochHeads = append(epochHeads, strings.Join(ed.Heads(), ","))
		}
		mergedBy, err := importMergedBy(b, doc)
		if err != nil {
			return rep, fmt.Errorf("memory: import block %q of %q: %w", b.Label, b.Owner, err)
		}
		pre = append(pre, prepared{b: b, info: info, rendered: doc.Render(), heads: strings.Join(doc.Heads(), ","), epochs: epochHeads, mergedBy: mergedBy})
	}
	// Every agent the dump writes for: new blocks, shares, archival,
	// messages and the context library are theirs.
	var writes []string
	for _, p := range pre {
		writes = append(writes, p.info.Owner)
	}
	for _, sh := range d.Shares {
		writes = append(writes, sh.Agent)
	}
	for _, e := range d.Archival {
		writes = append(writes, e.Agent)
	}
	for _, m := range d.Messages {
		writes = append(writes, m.Agent)
	}
	for _, b := range d.Batches {
		writes = append(writes, b.Agent)
	}
	for _, s := range d.Summaries {
		writes = append(writes, s.Agent)
	}
	for _, p := range d.Profiles {
		writes = append(writes, p.Agent)
	}
	for _, e := range d.Library {
		writes = append(writes, e.Agent)
	}
	err := c.writeBlocks(ctx, agentLocks(writes...), func(ctx context.Context, tx *sql.Tx) error {
		rep = ImportReport{}
		for _, agent := range slices.Sorted(maps.Keys(adds)) {
			if err := c.checkQuota(ctx, tx, agent, adds[agent]); err != nil {
				return err
			}
		}
		now := c.nanos()
		for _, p := range pre {
			sj, _ := schema.Marshal(p.info.Schema)
			var id int64
			err := tx.QueryRow(`INSERT INTO blocks (owner, label, description, block_type, permission, schema_json, char_limit,
				pinned, priority, rendered, heads, created_at, updated_at, incarnation)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, label) DO NOTHING RETURNING id`,
				p.info.Owner, p.info.Label, p.info.Description, string(p.info.Type), p.info.Permission.String(), string(sj),
				p.info.CharLimit, p.info.Pinned, p.info.Priority, p.rendered, p.heads, cmp.Or(p.b.CreatedAt, now), cmp.Or(p.b.UpdatedAt, now),
				newIncarnation()).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: block %q of agent %q", ErrExists, p.info.Label, p.info.Owner)
			}
			if err != nil {
				return err
			}
			c.created(tx, id)
			if err := putSnapshot(ctx, tx, id, p.b.Document); err != nil {
				return err
			}
			if err := insertMerged(ctx, tx, id, slices.Sorted(maps.Keys(p.mergedBy)), func(h string) string { return p.mergedBy[h] }); err != nil {
				return fmt.Errorf("block %q of %q: %w", p.info.Label, p.info.Owner, err)
			}
			for i, ep := range p.b.Epochs {
				if _, err := tx.Exec(`INSERT INTO block_archive (block_id, epoch, snapshot, snapshot_crc, heads, archived_at)
					SELECT id, ?, ?, ?, ?, ? FROM blocks WHERE owner = ? AND label = ?`, i, ep, checksum(ep), p.epochs[i], now, p.info.Owner, p.info.Label); err != nil {
					return err
				}
			}
			if n := len(p.b.Epochs); n > 0 {
				if _, err := tx.Exec(`UPDATE blocks SET epoch = ? WHERE owner = ? AND label = ?`, n, p.info.Owner, p.info.Label); err != nil {
					return err
				}
			}
			rep.Blocks++
		}
		for _, sh := range d.Shares {
			res, err := tx.Exec(`INSERT INTO shares (block_id, agent, permission, created_at)
				SELECT id, ?, ?, ? FROM blocks WHERE owner = ? AND label = ?`, sh.Agent, sh.Permission.String(), cmp.Or(sh.CreatedAt, now), sh.Owner, sh.Label)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return notFound("shared block %q of %q", sh.Label, sh.Owner)
			}
			rep.Shares++
		}
		// New blocks and shares change what their owners and sharees see.
		touched := map[string]bool{}
		for _, p := range pre {
			touched[p.info.Owner] = true
		}
		for _, sh := range d.Shares {
			touched[sh.Agent] = true
		}
		for i, p := range d.Profiles {
			at := now
			if !p.Profile.UpdatedAt.IsZero() {
				if err := checkStamp("time", p.Profile.UpdatedAt); err != nil {
					return fmt.Errorf("profile of %q: %w", p.Agent, err)
				}
				at = p.Profile.UpdatedAt.UnixNano()
			}
			var agent string
			err := tx.QueryRow(`INSERT INTO agent_profiles (agent, profile_json, updated_at) VALUES (?, ?, ?)
				ON CONFLICT (agent) DO NOTHING RETURNING agent`, p.Agent, string(profiles[i]), at).Scan(&agent)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: a profile of agent %q", ErrExists, p.Agent)
			}
			if err != nil {
				return fmt.Errorf("profile of %q: %w", p.Agent, err)
			}
			touched[p.Agent] = true
			rep.Profiles++
		}
		agents := make([]string, 0, len(touched))
		for a := range touched {
			agents = append(agents, a)
		}
		sort.Strings(agents)
		if err := bumpGen(tx, agents...); err != nil {
			return err
		}
		archIDs := map[int64]int64{}
		// Parsed once: an INSERT into archival compiles the full-text
		// triggers it fires, which costs more than the row.
		insArchival, err := tx.Prepare(`INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`)
		if err != nil {
			return err
		}
		defer insArchival.Close()
		insTag, err := tx.Prepare(archivalTagSQL)
		if err != nil {
			return err
		}
		defer insTag.Close()
		// In the order they were written (their ids), not the dump's
		// (created_at, which a backfill or another process writing at once
		// puts elsewhere): an entry naming a conversation is indexed with
		// its neighbours by id, and the new ids must keep them.
		inOrder := make([]int, len(d.Archival)) // indexes into d.Archival
		for i := range inOrder {
			inOrder[i] = i
		}
		slices.SortStableFunc(inOrder, func(a, b int) int { return cmp.Compare(d.Archival[a].ID, d.Archival[b].ID) })
		for _, i := range inOrder {
			e, meta := d.Archival[i], archMeta[i]
			tags := normTags(e.Tags)
			tj, _ := json.Marshal(append([]string{}, tags...))
			var validTo any
			if e.ValidTo != nil {
				validTo = e.ValidTo.UnixNano()
			}
			var id int64
			if err := insArchival.QueryRow(e.Agent, e.Content, meta, string(tj), strings.Join(tags, " "),
				e.CreatedAt.UnixNano(), e.ValidFrom.UnixNano(), validTo).Scan(&id); err != nil {
				return err
			}
			for _, t := range tags {
				if _, err := insTag.Exec(id, t); err != nil {
					return err
				}
			}
			archIDs[e.ID] = id
			rep.Archival++
		}
		for _, e := range d.Archival {
			if e.SupersededBy != 0 {
				if _, err := c.txExec(ctx, tx, archivalLinkSQL, archIDs[e.SupersededBy], archIDs[e.ID]); err != nil {
					return err
				}
			}
		}
		if err := importPlaces(tx, d, archIDs); err != nil {
			return err
		}
		for _, b := range d.Batches {
			var completed any
			if !b.CompletedAt.IsZero() {
				completed = b.CompletedAt.UnixNano()
			}
			complete := 0 // an integer column on both backends (pgx will not send a bool to it)
			if b.Complete {
				complete = 1
			}
			for _, t := range []time.Time{b.CreatedAt, b.CompletedAt} {
				if err := checkStamp("time", t); err != nil {
					return fmt.Errorf("batch %q of %q: %w", b.ID, b.Agent, err)
				}
			}
			if _, err := tx.Exec(`INSERT INTO batches (agent, batch_id, complete, created_at, completed_at) VALUES (?, ?, ?, ?, ?)`,
				b.Agent, b.ID, complete, b.CreatedAt.UnixNano(), completed); err != nil {
				return fmt.Errorf("batch %q of %q: %w", b.ID, b.Agent, err)
			}
			rep.Batches++
		}
		msgIDs := map[int64]int64{}
		for i, m := range d.Messages {
			var id int64
			if err := c.txQueryRow(ctx, tx, messageInsertQuery, m.Agent, string(m.Role), m.Content, m.Name, msgCalls[i], m.ToolCallID,
				m.BatchID, m.Seq, m.CreatedAt.UnixNano()).Scan(&id); err != nil {
				return err
			}
			msgIDs[m.ID] = id
			rep.Messages++
		}
		sumIDs := map[int64]int64{}
		for _, s := range d.Summaries {
			var prev any
			if s.PreviousID != 0 {
				prev = sumIDs[s.PreviousID]
			}
			if err := checkStamp("time", s.CreatedAt); err != nil {
				return fmt.Errorf("summary %d of %q: %w", s.ID, s.Agent, err)
			}
			var id int64
			if err := tx.QueryRow(`INSERT INTO summaries (agent, first_message_id, last_message_id, previous_id, content, model, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, s.Agent, msgIDs[s.FirstMessageID], msgIDs[s.LastMessageID], prev,
				s.Content, s.Model, s.CreatedAt.UnixNano()).Scan(&id); err != nil {
				return err
			}
			sumIDs[s.ID] = id
			rep.Summaries++
		}
		for _, p := range d.Proposals {
			var decided any
			if p.DecidedAt != 0 || p.Status != "pending" {
				decided = p.DecidedAt
			}
			var by any
			if p.DecidedBy != "" || p.Status != "pending" {
				by = p.DecidedBy
			}
			if p.Op == OpMergeArchival {
				args, err := importMergeArgs(p, archIDs)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(`INSERT INTO proposals (block_id, proposer, op, args_json, reason, status, created_at, decided_at, decided_by)
					VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?)`, p.Owner, p.Op, args, p.Reason, p.Status, p.CreatedAt, decided, by); err != nil {
					return fmt.Errorf("proposal %d on the archival memory of %q: %w", p.ID, p.Owner, err)
				}
				rep.Proposals++
				continue
			}
			res, err := tx.Exec(`INSERT INTO proposals (block_id, proposer, op, args_json, reason, status, created_at, decided_at, decided_by)
				SELECT id, ?, ?, ?, ?, ?, ?, ?, ? FROM blocks WHERE owner = ? AND label = ?`,
				p.Proposer, p.Op, string(p.Args), p.Reason, p.Status, p.CreatedAt, decided, by, p.Owner, p.Label)
			if err != nil {
				return fmt.Errorf("proposal %d on %q of %q: %w", p.ID, p.Label, p.Owner, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return notFound("block %q of %q, which proposal %d edits", p.Label, p.Owner, p.ID)
			}
			rep.Proposals++
		}
		for _, e := range d.Library {
			rec := 0
			if e.Recoverable {
				rec = 1
			}
			var id int64
			err := tx.QueryRow(`INSERT INTO context_library (agent, artifact, kind, title, content, hash, recoverable, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent, artifact) DO NOTHING RETURNING id`,
				e.Agent, e.ID, e.Kind, e.Title, e.Content, ArtifactHash(e.Content), rec, e.UpdatedAt).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: artifact %q in the context library of %q", ErrExists, e.ID, e.Agent)
			}
			if err != nil {
				return fmt.Errorf("artifact %q of %q: %w", e.ID, e.Agent, err)
			}
			rep.Library++
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrExists) && c.be.IsConflict(err) {
		// A batch, message or other row the store holds already (the same
		// dump imported twice): ErrExists, as for a block.
		return ImportReport{}, fmt.Errorf("memory: import: %w: %w", ErrExists, err)
	}
	if err != nil {
		return ImportReport{}, fmt.Errorf("memory: import: %w", err)
	}
	rep.Embedder = d.Embedder
	return rep, nil
}

// sameHeads reports whether a and b name the same change hashes.
func sameHeads(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// editOps are the operations an Edit (a proposal's args) may hold: those
// Edit.Apply knows.
var editOps = map[blocks.Op]bool{
	blocks.OpSetText: true, blocks.OpAppendText: true, blocks.OpReplaceText: true, blocks.OpInsertText: true,
	blocks.OpSetField: true, blocks.OpAppendToListField: true, blocks.OpIncrementCounter: true,
	blocks.OpPushItem: true, blocks.OpInsertItem: true, blocks.OpDeleteItem: true, blocks.OpCheckItem: true,
	blocks.OpAppendLogEntry: true, blocks.OpSetValue: true,
}

// checkProposal refuses a dump's proposal that the store could not list or
// decide: a status other than pending, approved or rejected, args that
// are not an Edit of a known op, an op column its args contradict, or no
// proposer. A dump edited by hand may hold any of these; once imported,
// such a proposal could never be decided and ListProposals would fail for
// every proposal of its owner.
func checkProposal(p DumpProposal) error {
	switch p.Status {
	case "pending", "approved", "rejected":
	default:
		return invalidArg("status %q (want pending, approved or rejected)", p.Status)
	}
	if err := checkAgent(p.Proposer); err != nil {
		return fmt.Errorf("proposer: %w", err)
	}
	if p.Op == OpMergeArchival {
		var m ArchivalMerge
		if err := json.Unmarshal(p.Args, &m); err != nil {
			return invalidArg("args are not an archival merge: %v", err)
		}
		if p.Label != "" || p.Proposer != p.Owner {
			return invalidArg("a merge of archival entries is on its owner's archival memory (label %q, proposer %q, owner %q)", p.Label, p.Proposer, p.Owner)
		}
		return checkMergeSources(m.Sources)
	}
	var e Edit
	if err := json.Unmarshal(p.Args, &e); err != nil {
		return invalidArg("args are not an edit: %v", err)
	}
	if !editOps[e.Op] {
		return invalidArg("args: unknown edit op %q", e.Op)
	}
	if p.Op != string(e.Op) {
		return invalidArg("op %q, but its args are a %q edit", p.Op, e.Op)
	}
	return nil
}

// importMergeArgs is p's ArchivalMerge (checked by checkProposal) with
// its sources renumbered as Import renumbered the archival entries
// (archIDs); a source the dump does not hold fails.
func importMergeArgs(p DumpProposal, archIDs map[int64]int64) (string, error) {
	var m ArchivalMerge
	if err := json.Unmarshal(p.Args, &m); err != nil {
		return "", invalidArg("proposal %d of %q: args are not an archival merge: %v", p.ID, p.Owner, err)
	}
	for i, src := range m.Sources {
		id, ok := archIDs[src]
		if !ok {
			return "", notFound("archival entry %d, which merge proposal %d of %q names", src, p.ID, p.Owner)
		}
		m.Sources[i] = id
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", invalidArg("proposal %d of %q: %v", p.ID, p.Owner, err)
	}
	return string(b), nil
}

// importMergedBy is who merged which changes of b from outside the store,
// as Import records it: b.MergedBy (each hash a change hash, each agent
// one), and the changes doc (b's document, loaded) holds beyond b.Heads —
// edits made to the dump after the export, judged as a merge by the
// block's owner (blocks.LoadExported) — as merged by the owner.
func importMergedBy(b DumpBlock, doc *blocks.Document) (map[string]string, error) {
	out := make(map[string]string, len(b.MergedBy))
	for h, agent := range b.MergedBy {
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			return nil, invalidArg("merged_by: %q is not a change hash (64 lowercase hex digits)", h)
		}
		if err := checkAgent(agent); err != nil {
			return nil, fmt.Errorf("merged_by: change %s: %w", h, err)
		}
		out[h] = agent
	}
	if len(b.Heads) == 0 || sameHeads(doc.Heads(), b.Heads) {
		return out, nil
	}
	at, err := doc.At(b.Heads)
	if err != nil {
		return nil, err
	}
	exported, err := at.History()
	if err != nil {
		return nil, err
	}
	all, err := doc.History()
	if err != nil {
		return nil, err
	}
	own := make(map[string]bool, len(exported))
	for _, c := range exported {
		own[c.Hash] = true
	}
	for _, c := range all {
		if !own[c.Hash] {
			out[c.Hash] = b.Owner
		}
	}
	return out, nil
}

// archivalPlaces appends owner's archival entries placed other than by
// their id (DumpArchivalPlace) to out, in id order.
func (c *Store) archivalPlaces(ctx context.Context, owner string, out []DumpArchivalPlace) ([]DumpArchivalPlace, error) {
	rows, err := c.rdb.QueryContext(ctx, `SELECT id, conversation_pos FROM archival WHERE agent = ? AND conversation_pos IS NOT NULL ORDER BY id`, owner)
	if err != nil {
		return nil, fmt.Errorf("memory: export: archival places of %q: %w", owner, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p DumpArchivalPlace
		var place any
		if err := rows.Scan(&p.ID, &place); err != nil {
			return nil, fmt.Errorf("memory: export: archival places of %q: %w", owner, err)
		}
		if p.Place = placeValue(place, p.ID, p.ID); p.Place != p.ID {
			out = append(out, p)
		}
	}
	return out, rows.Err()
}

// placeValue is a stored archival place (conversation_pos) of entry id
// as an integer that orders an entry numbered at among the conversation's
// entries as the engine orders the stored value (by COALESCE(place, id),
// then id). memory writes integers only, but SQLite's INTEGER column keeps
// what a hand edit gives it: NULL is id; a real number between two
// integers stands at the one on at's side of it (its floor for an entry
// numbered above it, its ceiling below), one beyond int64 (an infinity
// too) at the int64 limit on its side; a text or a blob, which SQLite
// orders after every number, at math.MaxInt64. So such an edit fails
// neither a merge nor an export of the agent, and an entry keeps its
// neighbours through a dump.
func placeValue(v any, id, at int64) int64 {
	switch v := v.(type) {
	case nil:
		return id
	case int64:
		return v
	case float64:
		switch {
		case math.IsNaN(v): // SQLite stores NaN as NULL
			return id
		case v >= math.MaxInt64: // 2^63 as a float64
			return math.MaxInt64
		case v < math.MinInt64:
			return math.MinInt64
		case float64(at) > v:
			return int64(math.Floor(v))
		default:
			return int64(math.Ceil(v))
		}
	}
	return math.MaxInt64
}

// importPlaces places the imported entries d.ArchivalPlaces names, their
// ids and places renumbered by archIDs (the dump's archival id to the
// new one; the new ids keep the dump's order). A place whose entry is not
// in the dump (deleted since the merge) is the place of the dump's entry
// next to it on the placed entry's side: the entry before it for an entry
// numbered above it (a merged entry, newer than its sources, stands after
// that entry as it stood after the deleted one), the entry after it for
// one numbered below (a hand edit). A place beyond the dump's last entry
// keeps its distance from it, saturating at math.MaxInt64, so the entry
// stands after every imported one; one before the first is the first
// entry's new id less one.
func importPlaces(tx *sql.Tx, d *Dump, archIDs map[int64]int64) error {
	if len(d.ArchivalPlaces) == 0 {
		return nil
	}
	old := slices.Sorted(maps.Keys(archIDs))
	first, last := old[0], old[len(old)-1]
	// Parsed once: an update of archival codes its triggers when parsed.
	setPlace, err := tx.Prepare(`UPDATE archival SET conversation_pos = ? WHERE id = ?`)
	if err != nil {
		return fmt.Errorf("memory: import: place archival entries: %w", err)
	}
	defer setPlace.Close()
	for _, p := range d.ArchivalPlaces {
		id, ok := archIDs[p.ID]
		if !ok {
			return invalidArg("archival place of entry %d: no such entry in the dump", p.ID)
		}
		place, ok := archIDs[p.Place]
		switch {
		case ok:
		case p.Place < first:
			place = archIDs[first] - 1
		case p.Place > last:
			place = archIDs[last]
			if d := p.Place - last; d < 0 || place > math.MaxInt64-d { // d < 0: the difference overflowed
				place = math.MaxInt64
			} else {
				place += d
			}
		default:
			i, _ := slices.BinarySearch(old, p.Place)
			if place = archIDs[old[i-1]]; p.ID < p.Place {
				place = archIDs[old[i]]
			}
		}
		if _, err := setPlace.Exec(place, id); err != nil {
			return fmt.Errorf("memory: import: place archival entry %d: %w", p.ID, err)
		}
	}
	return nil
}
