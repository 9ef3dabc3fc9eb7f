package ui

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// agentsQuery lists every agent that owns something. memory.Store has no
// agent listing, so this reads the tables the CLI's stats command reads
// (the same SQL on SQLite and PostgreSQL).
const agentsQuery = `SELECT owner FROM blocks UNION SELECT agent FROM archival UNION SELECT agent FROM messages UNION SELECT agent FROM shares`

func agentsFromDB(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, agentsQuery)
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
	db, ok := store.(interface{ DB() *sql.DB })
	if !ok {
		return nil, ErrNoAgentLister
	}
	return agentsFromDB(ctx, db.DB())
}

func (s *Server) agents(ctx context.Context) ([]string, error) {
	as, err := s.opts.Agents(ctx)
	if err != nil {
		return nil, err
	}
	sort.Strings(as)
	return as, nil
}

// knownAgent returns ErrUnknownAgent (a 404) for an agent that owns
// nothing.
func (s *Server) knownAgent(ctx context.Context, agent string) error {
	as, err := s.agents(ctx)
	if err != nil {
		return err
	}
	if _, ok := slices.BinarySearch(as, agent); !ok {
		return fmt.Errorf("%w: no agent %q in this store (it has no block, share, archival entry or message)", ErrUnknownAgent, agent)
	}
	return nil
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

// agentsOverview lists each agent's own blocks and those shared with it;
// own blocks say whom they are shared with.
func (s *Server) agentsOverview(ctx context.Context, agents []string) ([]agentBlocks, error) {
	type key struct{ owner, label string }
	sharedWith := map[key][]shareRow{}
	out := make([]agentBlocks, 0, len(agents))
	for _, a := range agents {
		ab := agentBlocks{Agent: a}
		sb, err := s.store.ListSharedBlocks(ctx, a)
		if err != nil {
			return nil, err
		}
		for _, b := range sb {
			sharedWith[key{b.Owner, b.Label}] = append(sharedWith[key{b.Owner, b.Label}], shareRow{Agent: a, Permission: b.Permission.String()})
			ab.Shared = append(ab.Shared, row(b.BlockMeta))
		}
		own, err := s.store.ListBlocks(ctx, a)
		if err != nil {
			return nil, err
		}
		for _, m := range own {
			ab.Own = append(ab.Own, row(m))
		}
		ps, err := s.store.ListProposals(ctx, a, "")
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if p.Status == "pending" {
				ab.Pending++
			}
		}
		out = append(out, ab)
	}
	for i := range out {
		for j := range out[i].Own {
			m := &out[i].Own[j]
			m.SharedWith = sharedWith[key{m.Owner, m.Label}]
		}
	}
	return out, nil
}

func row(m memory.BlockMeta) blockRow {
	r := blockRow{BlockMeta: m, Chars: len([]rune(m.Rendered))}
	if m.Schema != nil {
		r.Kind = string(m.Schema.Kind())
	}
	return r
}

// docFor opens owner's block as the owner, or explains why not.
func (s *Server) docFor(ctx context.Context, owner, label string) (*blocks.Document, error) {
	if err := s.knownAgent(ctx, owner); err != nil {
		return nil, err
	}
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
