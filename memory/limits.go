package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/unixnanos"
)

// The per-entry caps and the per-agent quota (Options.MaxArchivalBytes
// and the fields after it). Sizes are checked from what the caller handed
// over, before any work that grows with the entry (the reflection walk
// of checkStorable, embedding, the transaction); the quota inside the
// write's transaction, against the agent_usage row the database's
// triggers keep.

// tooLarge is ErrTooLarge for agent's item: its field is size bytes (or
// items), past limit (the Options field named by option).
func tooLarge(item, agent, field string, size int, unit string, limit int, option string) error {
	return fmt.Errorf("%w: %s for %q: %s is %d %s, past the cap of %d (Options.%s)",
		ErrTooLarge, item, agent, field, size, unit, limit, option)
}

// checkArchivalText refuses an archival entry whose content or tags are
// past the caps: the content's length, each tag's (trimmed) length, and
// the number of distinct tags, counted only up to one past the cap (a
// list of 200,000 tags costs as much to refuse as one of 65).
func (c *Store) checkArchivalText(agent, content string, tags []string) error {
	o := &c.opts
	if o.MaxArchivalBytes > 0 && len(content) > o.MaxArchivalBytes {
		return tooLarge("archival entry", agent, "content", len(content), "bytes", o.MaxArchivalBytes, "MaxArchivalBytes")
	}
	if o.MaxTags <= 0 && o.MaxTagBytes <= 0 {
		return nil
	}
	var seen map[string]struct{}
	if o.MaxTags > 0 && len(tags) > o.MaxTags {
		seen = make(map[string]struct{}, o.MaxTags+1)
	}
	for i, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if o.MaxTagBytes > 0 && len(t) > o.MaxTagBytes {
			return tooLarge("archival entry", agent, fmt.Sprintf("tag %d", i), len(t), "bytes", o.MaxTagBytes, "MaxTagBytes")
		}
		if seen != nil {
			seen[t] = struct{}{}
			if len(seen) > o.MaxTags {
				return fmt.Errorf("%w: archival entry for %q: tags: more than %d distinct tags (%d given), past the cap of %d (Options.MaxTags)",
					ErrTooLarge, agent, o.MaxTags, len(tags), o.MaxTags)
			}
		}
	}
	return nil
}

// checkMetadataSize refuses an archival entry whose metadata, as stored
// JSON, is n bytes past the cap.
func (c *Store) checkMetadataSize(agent string, n int) error {
	if m := c.opts.MaxMetadataBytes; m > 0 && n > m {
		return tooLarge("archival entry", agent, "metadata", n, "bytes", m, "MaxMetadataBytes")
	}
	return nil
}

// checkMessageSize refuses a message whose content, name, tool call id and
// tool calls JSON (calls bytes; -1 before they are encoded; none count
// when the message has no tool calls) are together past MaxMessageBytes.
func (c *Store) checkMessageSize(agent string, m *Message, calls int) error {
	limit := c.opts.MaxMessageBytes
	if limit <= 0 {
		return nil
	}
	if len(m.ToolCalls) == 0 {
		calls = 0
	}
	n := len(m.Content) + len(m.Name) + len(m.ToolCallID) + max(calls, 0)
	if n <= limit {
		return nil
	}
	field := "content"
	if len(m.Content) <= limit {
		field = "content, name, tool call id and tool calls"
	}
	size := len(m.Content)
	if field != "content" {
		size = n
	}
	return tooLarge("message", agent, field, size, "bytes", limit, "MaxMessageBytes")
}

// archivalBytes is what an archival row counts toward its agent's usage,
// as migration 0025 (SQLite) / 0021 (PostgreSQL) counts it.
func archivalBytes(content, meta, tags string) int64 {
	// Tags count four times: they are stored as JSON, as text, as rows of
	// the tag index and in the full-text index.
	return int64(len(content) + len(meta) + len(tags) + 3*max(len(tags)-2, 0) + UsageRowBytes)
}

// messageBytes is what a message row counts toward its agent's usage.
func messageBytes(m *Message, calls string) int64 {
	return int64(len(m.Content) + len(m.Name) + len(calls) + len(m.ToolCallID) + UsageRowBytes)
}

// usageQuery reads an agent's usage counter.
const usageQuery = `SELECT bytes FROM agent_usage WHERE agent = ?`

// checkQuota refuses, inside the write transaction tx, a write adding
// bytes to agent's usage past Options.AgentQuotaBytes. Every write that
// adds to an agent's usage (archival entries, messages, a log's rotation,
// an import) holds the agent's lock from before this read to its commit —
// SQLite's store-wide write lock (a group commit's writes run one after
// another in one transaction), PostgreSQL's per-agent lock — so the count
// read here includes every such write committed before this one, and none
// can slip in between the check and the insert.
func (c *Store) checkQuota(ctx context.Context, tx *sql.Tx, agent string, bytes int64) error {
	q := c.opts.AgentQuotaBytes
	if q <= 0 || bytes <= 0 {
		return nil
	}
	var used int64
	err := c.txQueryRow(ctx, tx, usageQuery, agent).Scan(&used)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("memory: read the storage used by %q: %w", agent, err)
	}
	return c.quotaError(agent, used, bytes)
}

// precheckQuota refuses, before any transaction, a write adding bytes
// that the usage already committed leaves no room for: a full agent's
// writes are refused without embedding their text or taking the write
// lock. The transaction checks again (checkQuota), authoritatively.
func (c *Store) precheckQuota(ctx context.Context, agent string, bytes int64) error {
	if c.opts.AgentQuotaBytes <= 0 || bytes <= 0 {
		return nil
	}
	used, err := c.storageUsed(ctx, agent)
	if err != nil {
		return err
	}
	return c.quotaError(agent, used, bytes)
}

// quotaError is ErrQuota when used + adding bytes is past the quota, else
// nil.
func (c *Store) quotaError(agent string, used, adding int64) error {
	q := c.opts.AgentQuotaBytes
	if q <= 0 || used+adding <= q {
		return nil
	}
	return fmt.Errorf("%w: agent %q holds %d bytes of archival entries and messages; this write adds %d, past its quota of %d bytes (Options.AgentQuotaBytes)",
		ErrQuota, agent, used, adding, q)
}

// checkProposal refuses agent's proposal of size bytes (its edit as JSON
// and its reason) past Options.MaxProposalBytes (ErrTooLarge), past
// Options.MaxPendingProposals pending ones, or past its quota with its
// pending proposals counted (ErrQuota). The count is read before the
// insert, not under the write lock: concurrent proposals of one agent may
// pass it together by a few.
func (c *Store) checkProposal(ctx context.Context, agent string, size int) error {
	o := &c.opts
	if o.MaxProposalBytes > 0 && size > o.MaxProposalBytes {
		return tooLarge("proposal", agent, "edit and reason", size, "bytes", o.MaxProposalBytes, "MaxProposalBytes")
	}
	if o.MaxPendingProposals <= 0 && o.AgentQuotaBytes <= 0 {
		return nil
	}
	var pending, pendingBytes int64
	err := c.rdb.QueryRowContext(ctx, `SELECT count(*), COALESCE(sum(length(args_json) + length(reason)), 0)
		FROM proposals WHERE proposer = ? AND status = 'pending'`, agent).Scan(&pending, &pendingBytes)
	if err != nil {
		return fmt.Errorf("memory: count the pending proposals of %q: %w", agent, err)
	}
	if o.MaxPendingProposals > 0 && pending >= int64(o.MaxPendingProposals) {
		return fmt.Errorf("%w: agent %q has %d proposals pending, the most it may (Options.MaxPendingProposals); wait for some to be decided",
			ErrQuota, agent, pending)
	}
	if o.AgentQuotaBytes <= 0 {
		return nil
	}
	used, err := c.storageUsed(ctx, agent)
	if err != nil {
		return err
	}
	return c.quotaError(agent, used+pendingBytes+pending*UsageRowBytes, int64(size)+UsageRowBytes)
}

// storageUsed implements [Agent.StorageUsed]: one row of the usage table,
// kept by the writes that change it.
func (c *Store) storageUsed(ctx context.Context, agent string) (int64, error) {
	if err := c.checkOpen(ctx); err != nil {
		return 0, err
	}
	var used int64
	err := c.rdb.QueryRowContext(ctx, usageQuery, agent).Scan(&used)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("memory: storage used by %q: %w", agent, err)
	}
	return used, nil
}

// checkStamp reports a time a store cannot hold: rows keep Unix
// nanoseconds in an int64, which wraps around outside 1677-09-21 to
// 2262-04-11 (a message from 2300 would read as from 1715). A zero time
// is unset (the caller's default, or a dump's field left out) and
// passes.
func checkStamp(what string, t time.Time) error {
	if t.IsZero() || unixnanos.Holds(t) {
		return nil
	}
	return invalidArg("%s %s is outside what a store holds (%s to %s)", what, t.UTC().Format(time.RFC3339),
		unixnanos.First().Format(time.RFC3339Nano), unixnanos.Last().Format(time.RFC3339Nano))
}
