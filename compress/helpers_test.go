package compress_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

// fixedClock is a deterministic clock for stores.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func openStore(t testing.TB) *memory.Store {
	t.Helper()
	st, err := memory.Open(context.Background(), ":memory:", &memory.Options{Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// hist builds synthetic histories (ids assigned in order) without a store.
type hist struct {
	msgs    []memory.Message
	batches []memory.Batch
	nextID  int64
	calls   int
}

func (h *hist) add(batch string, m memory.Message) memory.Message {
	h.nextID++
	m.ID = h.nextID
	m.BatchID = batch
	m.Agent = "a"
	h.msgs = append(h.msgs, m)
	return m
}

func (h *hist) setBatch(id string, complete bool) {
	h.batches = append(h.batches, memory.Batch{ID: id, Agent: "a", Complete: complete})
}

func (h *hist) user(batch, text string) memory.Message {
	return h.add(batch, memory.Message{Role: memory.RoleUser, Content: text})
}

func (h *hist) assistant(batch, text string) memory.Message {
	return h.add(batch, memory.Message{Role: memory.RoleAssistant, Content: text})
}

// call adds an assistant message calling tool and returns the call id.
func (h *hist) call(batch, tool string) string {
	h.calls++
	id := fmt.Sprintf("call_%d", h.calls)
	h.add(batch, memory.Message{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: id, Name: tool, Arguments: json.RawMessage(`{"q":"x"}`)}}})
	return id
}

func (h *hist) result(batch, callID, tool, text string) memory.Message {
	return h.add(batch, memory.Message{Role: memory.RoleTool, ToolCallID: callID, Name: tool, Content: text})
}

func (h *hist) input(active string) compress.Input {
	return compress.Input{Agent: "a", Messages: h.msgs, Batches: h.batches, ActiveBatch: active}
}

// countingSummarizer counts calls and records what it was given.
type countingSummarizer struct {
	mu        sync.Mutex
	calls     int
	previous  []string
	sizes     []int
	fail      error
	inner     compress.Summarizer
	lastInput []memory.Message
}

func (c *countingSummarizer) Summarize(ctx context.Context, previous string, msgs []memory.Message) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.previous = append(c.previous, previous)
	c.sizes = append(c.sizes, len(msgs))
	c.lastInput = msgs
	if c.fail != nil {
		return "", c.fail
	}
	if c.inner != nil {
		return c.inner.Summarize(ctx, previous, msgs)
	}
	return fmt.Sprintf("summary %d of %d messages (%d..%d)", c.calls, len(msgs), msgs[0].ID, msgs[len(msgs)-1].ID), nil
}

func ids(ms []memory.Message) []int64 {
	var out []int64
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func idRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}
