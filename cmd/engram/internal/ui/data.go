package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// admin is what the UI reads across agents beyond an agent handle
// (*memory.Admin has it).
type admin interface {
	Agents(ctx context.Context) ([]string, error)
	ProposalCounts(ctx context.Context) (map[string]memory.ProposalCount, error)
}

// storeAdmin is the operator side of a store that has one (such as
// *memory.Store).
func storeAdmin(store *memory.Store) (admin, error) {
	if store == nil {
		return nil, ErrNoAgentLister
	}
	return store.Admin(), nil
}

// Agents lists the agent ids of a store that has an Admin method (such
// as *memory.Store), sorted.
func Agents(ctx context.Context, store *memory.Store) ([]string, error) {
	a, err := storeAdmin(store)
	if err != nil {
		return nil, err
	}
	return a.Agents(ctx)
}

func (s *Server) agents(ctx context.Context) ([]string, error) {
	return s.admin.Agents(ctx)
}

// agentList lists the agents once per request. With want set, an agent
// that owns nothing is ErrUnknownAgent. On an error it renders the error
// page and returns false.
func (s *Server) agentList(w http.ResponseWriter, r *http.Request, want string) ([]string, bool) {
	as, err := s.agents(r.Context())
	if err != nil {
		s.failErr(w, r, "List agents", err)
		return nil, false
	}
	if want != "" {
		if _, ok := slices.BinarySearch(as, want); !ok {
			s.failErr(w, r, "Agent", fmt.Errorf("%w: no agent %q in this store (it has no block, share, archival entry or message)", ErrUnknownAgent, want))
			return nil, false
		}
	}
	return as, true
}

// proposalCounts maps each block owner to "all/pending" proposal counts.
func (s *Server) proposalCounts(ctx context.Context) (map[string]string, error) {
	counts, err := s.admin.ProposalCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(counts))
	for owner, n := range counts {
		out[owner] = fmt.Sprintf("%d/%d", n.All, n.Pending)
	}
	return out, nil
}

// Proposals lists proposals across agents, oldest first; with pendingOnly,
// only those still waiting for a decision.
func Proposals(ctx context.Context, store *memory.Store, agents []string, pendingOnly bool) ([]memory.Proposal, error) {
	var out []memory.Proposal
	for _, a := range agents {
		ps, err := store.Agent(a).Proposals(ctx)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if !pendingOnly || p.Status == "pending" {
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ProposalDiff returns the block's rendered content now and as it would be
// if proposal p were approved: the edit runs on a private fork, which is
// never persisted.
func ProposalDiff(ctx context.Context, store *memory.Store, p memory.Proposal) (before, after string, err error) {
	doc, err := store.Agent(p.Owner).Block(p.Label).Doc(ctx)
	if err != nil {
		return "", "", err
	}
	before = doc.Render()
	fork, err := doc.Fork()
	if err != nil {
		return before, "", fmt.Errorf("ui: fork block %q of %q: %w", p.Label, p.Owner, err)
	}
	found, err := p.Edit.Apply(fork, blocks.System)
	if err == nil && !found {
		err = fmt.Errorf("%w: the text to replace no longer occurs in the block", memory.ErrNoMatch)
	}
	if err != nil {
		return before, "", fmt.Errorf("ui: proposal %d would not apply now: %w", p.ID, err)
	}
	return before, fork.Render(), nil
}

// blockRow is one block in a listing.
type blockRow struct {
	memory.BlockMeta
	Kind       string
	Chars      int
	SharedWith []shareRow
}

type shareRow struct {
	Agent      string
	Permission string
}

type agentBlocks struct {
	Agent   string
	Own     []blockRow
	Shared  []blockRow
	Pending int
}

type blockKey struct{ owner, label string }

// shares is who shares what. The Store has no query for the sharees of a
// block, so it is read as one ListSharedBlocks per agent.
type shares struct {
	with map[blockKey][]shareRow         // a block → the agents it is shared with
	of   map[string][]memory.SharedBlock // an agent → the blocks shared with it
}

func (s *Server) sharedWith(ctx context.Context, agents []string) (shares, error) {
	sh := shares{with: map[blockKey][]shareRow{}, of: make(map[string][]memory.SharedBlock, len(agents))}
	for _, a := range agents {
		sb, err := s.store.Agent(a).SharedBlocks(ctx)
		if err != nil {
			return sh, err
		}
		sh.of[a] = sb
		for _, b := range sb {
			k := blockKey{b.Owner, b.Label}
			sh.with[k] = append(sh.with[k], shareRow{Agent: a, Permission: b.Permission.String()})
		}
	}
	return sh, nil
}

// overview lists agent's own blocks, saying whom each is shared with, the
// blocks shared with it and its pending proposals.
func (s *Server) overview(ctx context.Context, agent string, sh shares) (agentBlocks, error) {
	ab := agentBlocks{Agent: agent}
	for _, b := range sh.of[agent] {
		ab.Shared = append(ab.Shared, row(b.BlockMeta))
	}
	own, err := s.store.Agent(agent).Blocks(ctx)
	if err != nil {
		return ab, err
	}
	for _, m := range own {
		r := row(m)
		r.SharedWith = sh.with[blockKey{m.Owner, m.Label}]
		ab.Own = append(ab.Own, r)
	}
	ps, err := s.store.Agent(agent).Proposals(ctx)
	if err != nil {
		return ab, err
	}
	for _, p := range ps {
		if p.Status == "pending" {
			ab.Pending++
		}
	}
	return ab, nil
}

func row(m memory.BlockMeta) blockRow {
	r := blockRow{BlockMeta: m, Chars: len([]rune(m.Rendered))}
	if m.Schema != nil {
		r.Kind = string(m.Schema.Kind())
	}
	return r
}

// docFor opens owner's block as the owner, or explains why not. The
// caller checks that owner is a known agent (agentList).
func (s *Server) docFor(ctx context.Context, owner, label string) (*blocks.Document, error) {
	doc, err := s.store.Agent(owner).Block(label).Doc(ctx)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, fmt.Errorf("%w: agent %q has no block %q", memory.ErrNotFound, owner, label)
	}
	if err != nil {
		return nil, err
	}
	s.subscribe(owner, label, doc)
	return doc, nil
}
