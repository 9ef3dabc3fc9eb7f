package memory

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/unixnanos"
)

// shareBlock implements [Block.Share] for owner: the sharee's generation
// is bumped with the share.
func (c *Store) shareBlock(ctx context.Context, owner, label, withAgent string, perm blocks.Permission) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	if err := checkIDs(owner, label); err != nil {
		return err
	}
	if strings.TrimSpace(withAgent) == "" || withAgent == owner {
		return invalidArg("cannot share block %q of %q with %q", label, owner, withAgent)
	}
	if !perm.Valid() {
		return invalidArg("share permission %d", int(perm))
	}
	// The sharee's blocks generation is bumped with the share (see
	// BlocksStamp), under the block's lock (its writers read the share)
	// and the sharee's.
	var n int64
	err := c.writeBlocks(ctx, nil, func(ctx context.Context, tx *sql.Tx) error {
		id, ok, err := c.lockShared(ctx, tx, owner, label, withAgent)
		if err != nil || !ok {
			return err
		}
		res, err := tx.Exec(`INSERT INTO shares (block_id, agent, permission, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (block_id, agent) DO UPDATE SET permission = excluded.permission`,
			id, withAgent, perm.String(), c.nanos())
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return bumpGen(tx, withAgent)
	})
	if err != nil {
		return fmt.Errorf("memory: share block %q of %q with %q: %w", label, owner, withAgent, err)
	}
	if n == 0 {
		return notFound("block %q of agent %q", label, owner)
	}
	return nil
}

// lockShared finds owner's block label and locks it and agent (a sharee)
// in the write transaction tx; ok is false when there is no such block.
func (c *Store) lockShared(ctx context.Context, tx *sql.Tx, owner, label, agent string) (id int64, ok bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT id FROM blocks WHERE owner = ? AND label = ?`, owner, label).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if err := c.lock(ctx, tx, driver.BlockLock(id), driver.AgentLock(agent)); err != nil {
		return 0, false, err
	}
	// Deleted while the lock was awaited (a new block of that label is
	// another block): none.
	err = tx.QueryRowContext(ctx, `SELECT id FROM blocks WHERE id = ? AND owner = ? AND label = ?`, id, owner, label).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// unshareBlock implements [Block.Unshare] for owner: the sharee's pending
// proposals are withdrawn in the same transaction.
func (c *Store) unshareBlock(ctx context.Context, owner, label, withAgent string) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	// The sharee's pending proposals on the block go with its access.
	var n int64
	err := c.writeBlocks(ctx, nil, func(ctx context.Context, tx *sql.Tx) error {
		id, ok, err := c.lockShared(ctx, tx, owner, label, withAgent)
		if err != nil || !ok {
			return err
		}
		res, err := tx.Exec(`DELETE FROM shares WHERE agent = ? AND block_id = ?`, withAgent, id)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		if _, err := tx.Exec(`UPDATE proposals SET status = 'withdrawn', decided_at = ?, decided_by = 'system',
			reason = reason || ' [withdrawn: the share was revoked]'
			WHERE status = 'pending' AND proposer = ? AND block_id = ?`,
			c.nanos(), withAgent, id); err != nil {
			return err
		}
		return bumpGen(tx, withAgent)
	})
	if err != nil {
		return fmt.Errorf("memory: unshare block %q of %q from %q: %w", label, owner, withAgent, err)
	}
	if n == 0 {
		return notFound("block %q of agent %q is not shared with %q", label, owner, withAgent)
	}
	return nil
}

// listSharedBlocks implements [Agent.SharedBlocks].
func (c *Store) listSharedBlocks(ctx context.Context, agent string) ([]SharedBlock, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	if strings.TrimSpace(agent) == "" {
		return nil, invalidArg("agent id is empty")
	}
	rows, err := c.rdb.QueryContext(ctx, `SELECT `+prefixCols("b.", blockCols)+`, s.permission, s.created_at
		FROM shares s JOIN blocks b ON b.id = s.block_id WHERE s.agent = ?
		ORDER BY `+strings.ReplaceAll(typeOrder, "block_type", "b.block_type")+`, s.created_at, b.id`, agent)
	if err != nil {
		return nil, fmt.Errorf("memory: list blocks shared with %q: %w", agent, err)
	}
	defer rows.Close()
	var out []SharedBlock
	for rows.Next() {
		var perm string
		var at int64
		r, err := scanBlock(rows, &perm, &at)
		if err != nil {
			return nil, fmt.Errorf("memory: list blocks shared with %q: %w", agent, err)
		}
		m, err := r.meta(&c.schemas)
		if err != nil {
			return nil, err
		}
		if m.Permission, err = blocks.ParsePermission(perm); err != nil {
			return nil, err
		}
		m.SharedFrom = r.owner
		out = append(out, SharedBlock{BlockMeta: m, SharedWith: agent, SharedAt: fromNanos(at)})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		c.localRendering(&out[i].BlockMeta)
	}
	return out, nil
}

func prefixCols(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// proposeEdit implements [Block.Propose] for agent on owner's block (owner
// "": its own).
func (c *Store) proposeEdit(ctx context.Context, agent, owner, label string, e Edit, reason string) (Proposal, error) {
	if owner == "" {
		owner = agent
	}
	_, doc, err := c.view(ctx, agent, owner, label)
	if err != nil {
		return Proposal{}, err
	}
	if doc.Permission() == blocks.ReadOnly {
		return Proposal{}, fmt.Errorf("%w: agent %q may not propose edits to block %q of agent %q: its permission is ReadOnly",
			blocks.ErrPermission, agent, label, owner)
	}
	// Its size and the proposer's quota first: trying the edit copies
	// the whole block.
	args, err := json.Marshal(e)
	if err != nil {
		return Proposal{}, invalidArg("edit is not serialisable: %v", err)
	}
	if err := c.checkProposal(ctx, agent, len(args)+len(reason)); err != nil {
		return Proposal{}, err
	}
	if err := tryEdit(doc, e, owner, label); err != nil {
		return Proposal{}, err
	}
	now := c.nanos()
	id, err := c.insertID(ctx, nil, `INSERT INTO proposals (block_id, proposer, op, args_json, reason, created_at)
		SELECT id, ?, ?, ?, ?, ? FROM blocks WHERE owner = ? AND label = ? RETURNING id`,
		agent, string(e.Op), string(args), reason, now, owner, label)
	if err != nil {
		return Proposal{}, fmt.Errorf("memory: propose edit to %q/%q: %w", owner, label, err)
	}
	return Proposal{ID: id, Owner: owner, Label: label, Proposer: agent, Edit: e, Reason: reason, Status: "pending", CreatedAt: fromNanos(now)}, nil
}

// Propose keeps a Partner/Human edit made through any view of the block
// that the approver did not allow as a proposal, as ApplyEdit does (see
// blockseam.Proposer): the error is a *ProposalError, or, if the edit could
// not apply even if approved, why not.
//
// A view made before the permission changed may be refused for want of an
// approval the fresh permission no longer needs: that refusal stands (the
// caller tries again) and nothing is proposed.
func (e *entry) Propose(ctx context.Context, req blocks.ApprovalRequest, refused error) error {
	_, doc, err := e.c.view(ctx, req.Agent, e.owner, e.label)
	if err != nil {
		return errors.Join(refused, err)
	}
	if p := doc.Permission(); p != blocks.Partner && p != blocks.Human {
		return refused
	}
	ed, ok := editOf(req)
	if !ok {
		return refused // an operation that is not an Edit (a trim) cannot be proposed
	}
	p, perr := e.c.proposeEdit(ctx, req.Agent, e.owner, e.label, ed, "")
	var inv *InapplicableEditError
	if errors.As(perr, &inv) {
		return perr
	}
	if perr != nil {
		return errors.Join(refused, perr)
	}
	return &ProposalError{ProposalID: p.ID, Err: refused}
}

// editOf is the Edit an approval request describes (see the arguments
// blocks passes for each operation).
func editOf(r blocks.ApprovalRequest) (Edit, bool) {
	e := Edit{Op: r.Op, Section: r.Section, Field: r.Field}
	a := r.Args
	str := func(i int) (string, bool) {
		if i >= len(a) {
			return "", false
		}
		s, ok := a[i].(string)
		return s, ok
	}
	num := func(i int) (int, bool) {
		if i >= len(a) {
			return 0, false
		}
		n, ok := a[i].(int)
		return n, ok
	}
	var ok1, ok2 = true, true
	switch r.Op {
	case blocks.OpSetText, blocks.OpAppendText:
		e.Text, ok1 = str(0)
	case blocks.OpReplaceText:
		e.Old, ok1 = str(0)
		e.Text, ok2 = str(1)
	case blocks.OpInsertText:
		e.Index, ok1 = num(0)
		e.Text, ok2 = str(1)
	case blocks.OpSetField, blocks.OpAppendToListField, blocks.OpPushItem, blocks.OpAppendLogEntry, blocks.OpSetValue:
		ok1 = len(a) == 1
		if ok1 {
			e.Value = a[0]
		}
	case blocks.OpIncrementCounter:
		ok1 = len(a) == 1
		if ok1 {
			e.Delta, ok2 = a[0].(int64)
		}
	case blocks.OpInsertItem:
		e.Index, ok1 = num(0)
		ok2 = len(a) == 2
		if ok2 {
			e.Value = a[1]
		}
	case blocks.OpDeleteItem:
		e.Index, ok1 = num(0)
	case blocks.OpCheckItem:
		e.Index, ok1 = num(0)
		ok2 = len(a) == 2
		if ok2 {
			e.Value = a[1]
		}
	default:
		return Edit{}, false
	}
	return e, ok1 && ok2
}

// tryEdit runs e on a fork of doc as its accessor with ReadWrite, the way
// an approval would apply it, and returns why it could not apply, wrapped
// in an *InapplicableEditError.
func tryEdit(doc *blocks.Document, e Edit, owner, label string) error {
	fork, err := doc.Fork()
	if err != nil {
		return fmt.Errorf("memory: try proposed edit on %q/%q: %w", owner, label, err)
	}
	_, err = e.Apply(fork.View(doc.Accessor(), blocks.ReadWrite), blocks.Agent)
	if errors.Is(err, blocks.ErrCorrupt) {
		return fmt.Errorf("memory: try proposed edit on %q/%q: %w", owner, label, err)
	}
	if err != nil {
		return &InapplicableEditError{Err: err}
	}
	return nil
}

// listProposals lists the proposals on owner's block label, oldest first;
// label "" lists those on all of owner's blocks and on its archival memory
// ([Agent.Proposals]). A label owner does not use lists nothing:
// [Block.Proposals] checks the block exists first.
func (c *Store) listProposals(ctx context.Context, owner, label string) ([]Proposal, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	q := `SELECT p.id, b.owner, b.label, p.proposer, p.op, p.args_json, p.reason, p.status, p.created_at,
		COALESCE(p.decided_at, 0), COALESCE(p.decided_by, '') FROM proposals p JOIN blocks b ON b.id = p.block_id WHERE b.owner = ?`
	args := []any{owner}
	if label != "" {
		q += ` AND b.label = ?`
		args = append(args, label)
	} else {
		// And the proposals on owner's archival memory.
		q += ` UNION ALL ` + archivalProposalCols + ` WHERE p.block_id IS NULL AND p.proposer = ?`
		args = append(args, owner)
	}
	rows, err := c.rdb.QueryContext(ctx, `SELECT * FROM (`+q+`) u ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: list proposals of %q: %w", owner, err)
	}
	defer rows.Close()
	var out []Proposal
	for rows.Next() {
		p, err := scanProposal(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func scanProposal(s scanner) (Proposal, error) {
	var p Proposal
	var op, args string
	var created, decided int64
	if err := s.Scan(&p.ID, &p.Owner, &p.Label, &p.Proposer, &op, &args, &p.Reason, &p.Status, unixnanos.Scanner{N: &created}, unixnanos.Scanner{N: &decided}, &p.DecidedBy); err != nil {
		return p, fmt.Errorf("memory: read proposal: %w", err)
	}
	dst := any(&p.Edit)
	if op == OpMergeArchival {
		p.Merge = &ArchivalMerge{}
		dst = p.Merge
	}
	if err := json.Unmarshal([]byte(args), dst); err != nil {
		return p, fmt.Errorf("memory: proposal %d: %w", p.ID, err)
	}
	p.CreatedAt, p.DecidedAt = fromNanos(created), fromNanos(decided)
	return p, nil
}

func (c *Store) proposal(ctx context.Context, id int64) (Proposal, error) {
	row := c.rdb.QueryRowContext(ctx, `SELECT p.id, b.owner, b.label, p.proposer, p.op, p.args_json, p.reason, p.status, p.created_at,
		COALESCE(p.decided_at, 0), COALESCE(p.decided_by, '') FROM proposals p JOIN blocks b ON b.id = p.block_id WHERE p.id = ?
		UNION ALL `+archivalProposalCols+` WHERE p.id = ? AND p.block_id IS NULL`, id, id)
	p, err := scanProposal(row)
	if errors.Is(err, sql.ErrNoRows) {
		return p, notFound("proposal %d", id)
	}
	return p, err
}

// approveProposal implements [Agent.ApproveProposal] with approver as the
// approver (an agent id or "human:NAME"): the edit is applied through the
// proposer's view, approved, with the decision in the edit's transaction.
func (c *Store) approveProposal(ctx context.Context, id int64, approver string) error {
	p, err := c.pendingProposal(ctx, id, approver)
	if err != nil {
		return err
	}
	if p.Merge != nil {
		if _, err := c.applyMerge(ctx, p.Owner, *p.Merge, id, approver); err != nil {
			return fmt.Errorf("memory: apply proposal %d: %w", id, err)
		}
		return nil
	}
	ent, _, err := c.view(ctx, p.Proposer, p.Owner, p.Label)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: proposal %d: its proposer %q can no longer see block %q of %q", ErrNotFound, id, p.Proposer, p.Label, p.Owner)
	}
	if err != nil {
		return err
	}
	perm, err := c.accessPermission(ctx, p.Proposer, p.Owner, p.Label)
	if err != nil {
		return err
	}
	decided := &writeTx{decide: func(tx *sql.Tx) error { return c.decideTx(tx, id, "approved", approver, "") }}
	view := ent.doc.View(p.Proposer, perm).Approved(decided).WithContext(ctx)
	_, err = p.Edit.Apply(view, blocks.Agent)
	if err != nil {
		return fmt.Errorf("memory: apply proposal %d: %w", id, err)
	}
	return nil
}

// rejectProposal implements [Agent.RejectProposal].
func (c *Store) rejectProposal(ctx context.Context, id int64, approver, reason string) error {
	if _, err := c.pendingProposal(ctx, id, approver); err != nil {
		return err
	}
	// (No lock: decideTx's guarded UPDATE decides against an approval.)
	return c.write(ctx, nil, func(ctx context.Context, tx *sql.Tx) error { return c.decideTx(tx, id, "rejected", approver, reason) })
}

// HumanApprover prefixes the name of a person deciding proposals (see
// [Agent.ApproveProposal]).
const HumanApprover = "human:"

// pendingProposal reads proposal id, checks it is pending and that
// approver may decide it.
func (c *Store) pendingProposal(ctx context.Context, id int64, approver string) (Proposal, error) {
	if err := c.checkOpen(ctx); err != nil {
		return Proposal{}, err
	}
	p, err := c.proposal(ctx, id)
	if err != nil {
		return p, err
	}
	if p.Status != "pending" {
		return p, invalidArg("proposal %d is already %s", id, p.Status)
	}
	switch {
	case approver == p.Owner:
		return p, nil
	case strings.HasPrefix(approver, HumanApprover) && strings.TrimSpace(approver[len(HumanApprover):]) != "":
		return p, nil
	case strings.TrimSpace(approver) == "":
		return p, invalidArg("proposal %d: approver is empty", id)
	case p.Merge != nil:
		return p, fmt.Errorf("%w: %q may not decide proposal %d on the archival memory of agent %q: only that agent or a person (%sNAME) may",
			blocks.ErrPermission, approver, id, p.Owner, HumanApprover)
	}
	perm, err := c.accessPermission(ctx, approver, p.Owner, p.Label)
	if err == nil && perm == blocks.Admin {
		return p, nil
	}
	return p, fmt.Errorf("%w: %q may not decide proposal %d on block %q of agent %q: only the owner, an agent with Admin on the block, or a person (%sNAME) may",
		blocks.ErrPermission, approver, id, p.Label, p.Owner, HumanApprover)
}

// accessPermission is agent's current permission on owner's block: its
// own when it is the owner, else the share's.
func (c *Store) accessPermission(ctx context.Context, agent, owner, label string) (blocks.Permission, error) {
	if agent != owner {
		return c.sharedPermission(ctx, agent, owner, label)
	}
	var p string
	err := c.rdb.QueryRowContext(ctx, `SELECT permission FROM blocks WHERE owner = ? AND label = ?`, owner, label).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, notFound("block %q of agent %q", label, owner)
	}
	if err != nil {
		return 0, fmt.Errorf("memory: permission of %q on %q/%q: %w", agent, owner, label, err)
	}
	return blocks.ParsePermission(p)
}

// decideTx marks a pending proposal decided inside tx; a proposal decided
// meanwhile (by another approver or process) fails the transaction.
func (c *Store) decideTx(tx *sql.Tx, id int64, status, by, reason string) error {
	q := `UPDATE proposals SET status = ?, decided_at = ?, decided_by = ? WHERE id = ? AND status = 'pending'`
	args := []any{status, c.nanos(), by, id}
	if reason != "" {
		q = `UPDATE proposals SET status = ?, decided_at = ?, decided_by = ?, reason = reason || ? WHERE id = ? AND status = 'pending'`
		args = []any{status, c.nanos(), by, " [" + status + ": " + reason + "]", id}
	}
	res, err := tx.Exec(q, args...)
	if err != nil {
		return fmt.Errorf("memory: decide proposal %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmp.Or(err, invalidArg("proposal %d was decided concurrently", id))
	}
	return nil
}

// archivalProposalCols selects a proposal on an archival memory (block_id
// NULL) as scanProposal reads it: its owner is its proposer.
const archivalProposalCols = `SELECT p.id, p.proposer, '', p.proposer, p.op, p.args_json, p.reason, p.status, p.created_at,
		COALESCE(p.decided_at, 0), COALESCE(p.decided_by, '') FROM proposals p`
