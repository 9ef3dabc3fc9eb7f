package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// interleaved is a store where another writer changes a block between the
// tool's read of it and its edit: the race block_replace cannot rule out
// by checking the text first.
type interleaved struct {
	memory.Store
	before func()
}

func (s *interleaved) ApplyEdit(ctx context.Context, agent, owner, label string, e memory.Edit) error {
	if s.before != nil {
		s.before()
		s.before = nil
	}
	return s.Store.ApplyEdit(ctx, agent, owner, label, e)
}

func TestBlockReplaceRacingWriter(t *testing.T) {
	st := openStore(t, nil)
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "notes", Value: "meet on Friday"})
	racy := &interleaved{Store: st, before: func() {
		// Another agent or process rewrites the passage first.
		if err := st.UpdateBlockText(context.Background(), "alice", "notes", "meet on Monday"); err != nil {
			t.Error(err)
		}
	}}
	ts := newToolset(t, racy, "alice", nil)
	res := call(t, ts, "block_replace", `{"label":"notes","old":"Friday","new":"Saturday"}`)
	if !res.IsError || !strings.Contains(res.Content, `no match for "Friday" in block "notes"`) {
		t.Fatalf("replace after a racing rewrite: %+v", res)
	}
	if got := render(t, st, "alice", "alice", "notes"); got != "meet on Monday" {
		t.Fatalf("block = %q", got)
	}
	// Without the race it is replaced.
	res = call(t, ts, "block_replace", `{"label":"notes","old":"Monday","new":"Tuesday"}`)
	if res.IsError || render(t, st, "alice", "alice", "notes") != "meet on Tuesday" {
		t.Fatalf("replace: %+v", res)
	}
}

// TestProposeEditRacingWriter: the store tries a proposal again; one whose
// text vanished after the tool's own trial is refused the same way.
func TestProposeEditRacingWriter(t *testing.T) {
	st := openStore(t, nil)
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "approval", Permission: blocks.Human, Value: "policy: be kind"})
	ts := newToolset(t, &proposeRace{Store: st, t: t}, "alice", nil)
	res := call(t, ts, "propose_edit", `{"label":"approval","op":"replace_text","old":"kind","text":"very kind","reason":"r"}`)
	if !res.IsError || !strings.Contains(res.Content, `no match for "kind"`) {
		t.Fatalf("proposal after a racing rewrite: %+v", res)
	}
	if ps, err := st.ListProposals(context.Background(), "alice", "approval"); err != nil || len(ps) != 0 {
		t.Fatalf("proposals %+v %v", ps, err)
	}
}

type proposeRace struct {
	memory.Store
	t *testing.T
}

func (s *proposeRace) ProposeEdit(ctx context.Context, agent, owner, label string, e memory.Edit, reason string) (memory.Proposal, error) {
	doc, err := s.Store.GetBlock(ctx, "alice", "approval")
	if err != nil {
		s.t.Fatal(err)
	}
	if err := doc.SetText("policy: be fair", blocks.System); err != nil {
		s.t.Fatal(err)
	}
	return s.Store.ProposeEdit(ctx, agent, owner, label, e, reason)
}
