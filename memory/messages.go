package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/unixnanos"
	"github.com/engram-go/engram/search"
)

func validRole(r Role) bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}

// appendMessage implements [Messages.Append].
func (c *Store) appendMessage(ctx context.Context, agent string, m Message) (Message, error) {
	out, err := c.appendMessages(ctx, agent, []Message{m})
	if err != nil {
		return m, err
	}
	return out[0], nil
}

// addMessages implements [Messages.AppendMany].
func (c *Store) addMessages(ctx context.Context, agent string, msgs []Message) ([]Message, error) {
	return c.appendMessages(ctx, agent, msgs)
}

func (c *Store) appendMessages(ctx context.Context, agent string, msgs []Message) ([]Message, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	if strings.TrimSpace(agent) == "" {
		return nil, invalidArg("agent id is empty")
	}
	out := slices.Clone(msgs)
	calls := make([]string, len(out))
	var adds int64 // toward the agent's usage
	var texts []string
	for i := range out {
		m := &out[i]
		at := ""
		if len(out) > 1 {
			at = fmt.Sprintf(" (message %d)", i)
		}
		if !validRole(m.Role) {
			return nil, invalidArg("message role %q (want system, user, assistant or tool)%s", m.Role, at)
		}
		if strings.TrimSpace(m.BatchID) == "" {
			return nil, invalidArg("message for %q has no batch id%s", agent, at)
		}
		if m.Seq < 0 {
			return nil, invalidArg("negative message seq %d%s", m.Seq, at)
		}
		// The sizes first, the walk over every string after.
		if err := c.checkMessageSize(agent, m, -1); err != nil {
			return nil, fmt.Errorf("%w%s", err, at)
		}
		tc := m.ToolCalls
		if tc == nil {
			tc = []ToolCall{}
		}
		b, err := json.Marshal(tc)
		if err != nil {
			return nil, invalidArg("tool calls: %v%s", err, at)
		}
		if err := c.checkMessageSize(agent, m, len(b)); err != nil {
			return nil, fmt.Errorf("%w%s", err, at)
		}
		if err := checkStorable(agent, "message", "", m); err != nil {
			return nil, fmt.Errorf("%w%s", err, at)
		}
		m.Agent = agent
		if m.CreatedAt.IsZero() {
			m.CreatedAt = c.opts.Now().UTC()
		}
		if err := checkStamp(fmt.Sprintf("message of %q: created_at", agent), m.CreatedAt); err != nil {
			return nil, fmt.Errorf("%w%s", err, at)
		}
		calls[i] = string(b)
		adds += messageBytes(m, calls[i])
		if strings.TrimSpace(m.Content) != "" {
			texts = append(texts, m.Content)
		}
	}
	if err := c.precheckQuota(ctx, agent, adds); err != nil {
		return nil, err
	}
	vecs := make([][]float32, len(out)) // nil: no content, or no embedder
	if c.index.Embedder() != nil && len(texts) > 0 {
		all, err := c.index.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("memory: embed messages for %q: %w", agent, err)
		}
		next := 0
		for i := range out {
			if strings.TrimSpace(out[i].Content) != "" {
				vecs[i] = all[next]
				next++
			}
		}
	}
	seqs := make([]int, len(out))
	for i := range out {
		seqs[i] = out[i].Seq
	}
	// The agent's lock: its batches' sequence numbers and message ids
	// are handed out in commit order.
	err := c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		if err := c.checkQuota(ctx, tx, agent, adds); err != nil {
			return err
		}
		// Per call, each batch is checked once and its last seq read once.
		checked, last := map[string]bool{}, map[string]int{}
		items := make([]searchindex.EmbeddingItem, 0, len(out))
		for i := range out {
			m := &out[i]
			m.Seq = seqs[i]
			if err := c.appendMessageTx(ctx, tx, m, calls[i], checked, last); err != nil {
				return err
			}
			if vecs[i] != nil {
				items = append(items, searchindex.EmbeddingItem{ID: m.ID, Owner: agent, Vector: vecs[i], New: true})
			}
		}
		if len(items) > 0 {
			if err := c.index.PutEmbeddings(context.WithoutCancel(ctx), tx, search.Messages, items); err != nil {
				return fmt.Errorf("memory: index %d messages of %q: %w", len(items), agent, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// The statements of a message append, prepared once for the writer (on
// SQLite parsing the insert codes its triggers' programs: about 40% of an
// append when parsed per call).
const (
	// batchHighQuery reads a batch's highest seq (0 when it has none): the
	// last entry of the (agent, batch_id, seq) index. Asked as MAX(seq),
	// PostgreSQL chose between that entry and the whole batch by its guess
	// of the batch's size, and a batch it took for a row or two (a table
	// never analyzed, or a batch among many) was read whole on each append.
	batchHighQuery = `SELECT COALESCE((SELECT seq FROM messages WHERE agent = ? AND batch_id = ? ORDER BY seq DESC LIMIT 1), 0)`
	// batchStateQuery reads a batch's state and its highest seq at once.
	batchStateQuery    = `SELECT complete, (` + batchHighQuery + `) FROM batches WHERE agent = ? AND batch_id = ?`
	batchInsertQuery   = `INSERT INTO batches (agent, batch_id, created_at) VALUES (?, ?, ?)`
	messageInsertQuery = `INSERT INTO messages (agent, role, content, name, tool_calls_json, tool_call_id, batch_id, seq, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
)

// appendMessageTx inserts m, starting its batch if new and giving it the
// batch's next seq when it has none. Within one transaction each batch is
// checked once (checked) and its highest seq read at most once (last
// holds it from then on).
func (c *Store) appendMessageTx(ctx context.Context, tx *sql.Tx, m *Message, callsJSON string, checked map[string]bool, last map[string]int) error {
	agent := m.Agent
	if !checked[m.BatchID] {
		// The batch's state and its highest seq in one round trip.
		var complete bool
		var high int
		err := c.txQueryRow(ctx, tx, batchStateQuery, agent, m.BatchID, agent, m.BatchID).Scan(&complete, &high)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := c.txExec(ctx, tx, batchInsertQuery, agent, m.BatchID, m.CreatedAt.UnixNano()); err != nil {
				return fmt.Errorf("memory: start batch %q for %q: %w", m.BatchID, agent, err)
			}
		case err != nil:
			return fmt.Errorf("memory: append message for %q: %w", agent, err)
		case complete:
			return invalidArg("batch %q of agent %q is complete", m.BatchID, agent)
		default:
			last[m.BatchID] = high // a batch is checked before last holds it
		}
		checked[m.BatchID] = true
	}
	seq, known := last[m.BatchID]
	if m.Seq == 0 {
		if !known {
			if err := c.txQueryRow(ctx, tx, batchHighQuery, agent, m.BatchID).Scan(&seq); err != nil {
				return fmt.Errorf("memory: append message for %q: %w", agent, err)
			}
			known = true
		}
		if seq == math.MaxInt {
			return invalidArg("batch %q of agent %q has a message at seq %d: no seq after it", m.BatchID, agent, seq)
		}
		m.Seq = seq + 1
	}
	if known {
		last[m.BatchID] = max(seq, m.Seq)
	}
	err := c.txQueryRow(ctx, tx, messageInsertQuery, agent, string(m.Role), m.Content, m.Name, callsJSON,
		m.ToolCallID, m.BatchID, m.Seq, m.CreatedAt.UnixNano()).Scan(&m.ID)
	if err != nil {
		if c.be.IsConflict(err) {
			return fmt.Errorf("%w: message %d of batch %q (agent %q)", ErrExists, m.Seq, m.BatchID, agent)
		}
		return fmt.Errorf("memory: append message for %q: %w", agent, err)
	}
	return nil
}

// messages implements [Messages.List]. An incremental read that finds
// nothing is remembered until the next commit (noMessages).
func (c *Store) messages(ctx context.Context, agent string, q *MessageQuery) ([]Message, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	var qq MessageQuery
	if q != nil {
		qq = *q
	}
	if qq.Limit < 0 {
		return nil, invalidArg("negative limit")
	}
	where := `agent = ?`
	args := []any{agent}
	if qq.AfterID > 0 {
		where += ` AND id > ?`
		args = append(args, qq.AfterID)
	}
	if qq.BatchID != "" {
		where += ` AND batch_id = ?`
		args = append(args, qq.BatchID)
	}
	wc, wa := unixnanos.NewWindow(qq.Since, qq.Until).Conditions("created_at")
	for _, c := range wc {
		where += ` AND ` + c
	}
	args = append(args, wa...)
	cols := `id, agent, role, content, name, tool_calls_json, tool_call_id, batch_id, seq, created_at`
	sqlq := `SELECT ` + cols + ` FROM messages WHERE ` + where + ` ORDER BY id`
	if qq.Limit > 0 {
		if qq.Newest {
			sqlq = `SELECT * FROM (SELECT ` + cols + ` FROM messages WHERE ` + where + ` ORDER BY id DESC LIMIT ?) AS newest ORDER BY id`
		} else {
			sqlq += ` LIMIT ?`
		}
		args = append(args, qq.Limit)
	}
	// The incremental read (AfterID) runs on every context build, and most
	// find nothing new: that answer stands while nothing is committed.
	version, versioned, err := c.dataVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("memory: messages of %q: %w", agent, err)
	}
	key := messagesKey{agent: agent, q: qq}
	if _, hit := c.noMessages.get(key, version); versioned && hit {
		return nil, nil
	}
	// A handful of query shapes, each prepared once.
	st, err := c.prepared(ctx, sqlq)
	if err != nil {
		return nil, fmt.Errorf("memory: messages of %q: %w", agent, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: messages of %q: %w", agent, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var role, calls string
		var created int64
		if err := rows.Scan(&m.ID, &m.Agent, &role, &m.Content, &m.Name, &calls, &m.ToolCallID, &m.BatchID, &m.Seq, unixnanos.Scanner{N: &created}); err != nil {
			return nil, fmt.Errorf("memory: messages of %q: %w", agent, err)
		}
		m.Role, m.CreatedAt = Role(role), fromNanos(created)
		if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
			return nil, fmt.Errorf("memory: message %d tool calls: %w", m.ID, err)
		}
		if len(m.ToolCalls) == 0 {
			m.ToolCalls = nil
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: messages of %q: %w", agent, err)
	}
	if versioned && len(out) == 0 {
		c.noMessages.put(key, version, struct{}{})
	}
	return out, nil
}

// messagesKey is one Messages read.
type messagesKey struct {
	agent string
	q     MessageQuery
}

// completeBatch implements [Messages.CompleteBatch].
func (c *Store) completeBatch(ctx context.Context, agent, batchID string) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	n, err := c.exec(ctx, agentLock(agent), `UPDATE batches SET complete = 1, completed_at = ? WHERE agent = ? AND batch_id = ?`,
		c.nanos(), agent, batchID)
	if err != nil {
		return fmt.Errorf("memory: complete batch %q of %q: %w", batchID, agent, err)
	}
	if n == 0 {
		return notFound("batch %q of agent %q", batchID, agent)
	}
	return nil
}

// batches implements [Messages.Batches].
func (c *Store) batches(ctx context.Context, agent string) ([]Batch, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	rows, err := c.rdb.QueryContext(ctx, `SELECT batch_id, complete, created_at, COALESCE(completed_at, 0) FROM batches
		WHERE agent = ? ORDER BY created_at, batch_id`, agent)
	if err != nil {
		return nil, fmt.Errorf("memory: batches of %q: %w", agent, err)
	}
	defer rows.Close()
	var out []Batch
	for rows.Next() {
		b := Batch{Agent: agent}
		var created, completed int64
		if err := rows.Scan(&b.ID, &b.Complete, unixnanos.Scanner{N: &created}, unixnanos.Scanner{N: &completed}); err != nil {
			return nil, fmt.Errorf("memory: batches of %q: %w", agent, err)
		}
		b.CreatedAt, b.CompletedAt = fromNanos(created), fromNanos(completed)
		out = append(out, b)
	}
	return out, rows.Err()
}

// saveSummary implements [Messages.SaveSummary].
func (c *Store) saveSummary(ctx context.Context, agent string, s Summary) (Summary, error) {
	if err := c.checkOpen(ctx); err != nil {
		return s, err
	}
	if s.FirstMessageID <= 0 || s.LastMessageID < s.FirstMessageID {
		return s, invalidArg("summary range %d..%d", s.FirstMessageID, s.LastMessageID)
	}
	s.Agent = agent
	if s.CreatedAt.IsZero() {
		s.CreatedAt = c.opts.Now().UTC()
	}
	if err := checkStamp(fmt.Sprintf("summary of %q: created_at", agent), s.CreatedAt); err != nil {
		return s, err
	}
	var prev any
	if s.PreviousID != 0 {
		prev = s.PreviousID
	}
	var err error
	s.ID, err = c.insertID(ctx, agentLock(agent), `INSERT INTO summaries (agent, first_message_id, last_message_id, previous_id, content, model, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, agent, s.FirstMessageID, s.LastMessageID, prev, s.Content, s.Model, s.CreatedAt.UnixNano())
	if err != nil {
		return s, fmt.Errorf("memory: save summary for %q: %w", agent, err)
	}
	return s, nil
}

// latestSummary implements [Messages.LatestSummary].
func (c *Store) latestSummary(ctx context.Context, agent string) (Summary, error) {
	if err := c.checkOpen(ctx); err != nil {
		return Summary{}, err
	}
	s := Summary{Agent: agent}
	var prev sql.NullInt64
	var created int64
	err := c.rdb.QueryRowContext(ctx, `SELECT id, first_message_id, last_message_id, previous_id, content, model, created_at
		FROM summaries WHERE agent = ? ORDER BY last_message_id DESC, id DESC LIMIT 1`, agent).
		Scan(&s.ID, &s.FirstMessageID, &s.LastMessageID, &prev, &s.Content, &s.Model, unixnanos.Scanner{N: &created})
	if errors.Is(err, sql.ErrNoRows) {
		return s, notFound("summary for agent %q", agent)
	}
	if err != nil {
		return s, fmt.Errorf("memory: latest summary of %q: %w", agent, err)
	}
	s.PreviousID, s.CreatedAt = prev.Int64, fromNanos(created)
	return s, nil
}
