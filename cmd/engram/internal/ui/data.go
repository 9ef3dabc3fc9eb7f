package ui

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// AgentsQuery lists every agent that owns something or has a block shared
// with it. memory.Store has no agent listing, so the UI and "engram stats"
// read it with this SQL (the same on SQLite and PostgreSQL).
const AgentsQuery = `SELECT owner FROM blocks UNION SELECT agent FROM archival UNION SELECT agent FROM messages UNION SELECT agent FROM shares`

// storeDB is the SQL database of a store that has a DB method (such as
// *memory.Cache).
func storeDB(store memory.Store) (*sql.DB, error) {
	db, ok := store.(interface{ DB() *sql.DB })
	if !ok {
		return nil, ErrNoAgentLister
	}
	return db.DB(), nil
}

func agentsFromDB(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, AgentsQuery)
	if err != nil {
		return nil, fmt.Errorf("ui: list agents: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("ui: list agents: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ui: list agents: %w", err)
	}
	sort.Strings(out)
	return out, nil
}

// Agents lists the agent ids of a store that has a DB method (such as
// *memory.Cache), sorted.
func Agents(ctx context.Context, store memory.Store) ([]string, error) {
	db, err := storeDB(store)
	if err != nil {
		return nil, err
	}
	return agentsFromDB(ctx, db)
}

func (s *Server) agents(ctx context.Context) ([]string, error) {
	return agentsFromDB(ctx, s.db)
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

// proposalCountsQuery counts, per block owner, all proposals and the
// pending ones: what the live loop compares, in one query.
const proposalCountsQuery = `SELECT b.owner, count(*), count(CASE WHEN p.status = 'pending' THEN 1 END)
	FROM proposals p JOIN blocks b ON b.id = p.block_id GROUP BY b.owner`

// proposalCounts maps each block owner to "all/pending" proposal counts.
func (s *Server) proposalCounts(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, proposalCountsQuery)
	if err != nil {
		return nil, fmt.Errorf("ui: count proposals: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var owner string
		var all, pending int
		if err := rows.Scan(&owner, &all, &pending); err != nil {
			return nil, fmt.Errorf("ui: count proposals: %w", err)
		}
		out[owner] = fmt.Sprintf("%d/%d", all, pending)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ui: count proposals: %w", err)
	}
	return out, nil
}

// Proposals lists proposals across agents, oldest first; with pendingOnly,
// only those still waiting for a decision.
func Proposals(ctx context.Context, store memory.Store, agents []string, pendingOnly bool) ([]memory.Proposal, error) {
	var out []memory.Proposal
	for _, a := range agents {
		ps, err := store.ListProposals(ctx, a, "")
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
func ProposalDiff(ctx context.Context, store memory.Store, p memory.Proposal) (before, after string, err error) {
	doc, err := store.GetBlock(ctx, p.Owner, p.Label)
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
		sb, err := s.store.ListSharedBlocks(ctx, a)
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
	own, err := s.store.ListBlocks(ctx, agent)
	if err != nil {
		return ab, err
	}
	for _, m := range own {
		r := row(m)
		r.SharedWith = sh.with[blockKey{m.Owner, m.Label}]
		ab.Own = append(ab.Own, r)
	}
	ps, err := s.store.ListProposals(ctx, agent, "")
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
	doc, err := s.store.GetBlock(ctx, owner, label)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, fmt.Errorf("%w: agent %q has no block %q", memory.ErrNotFound, owner, label)
	}
	if err != nil {
		return nil, err
	}
	s.subscribe(owner, label, doc)
	return doc, nil
}
