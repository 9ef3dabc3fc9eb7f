package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/tools"
)

func TestBlockReplaceRacingWriter(t *testing.T) {
	st := openStore(t, nil)
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "notes", Value: "meet on Friday"})
	// Another writer changes the block between the tool's read of it and
	// its edit: the race block_replace cannot rule out by checking the
	// text first.
	ts := newToolset(t, st, "alice", nil)
	raced := false
	tools.InterceptEdits(ts, func(ctx context.Context, b *memory.Block, e memory.Edit) error {
		if !raced {
			raced = true
			// Another agent or process rewrites the passage first.
			if err := st.Agent("alice").Block("notes").SetText(ctx, "meet on Monday"); err != nil {
				t.Error(err)
			}
		}
		return b.Apply(ctx, e)
	}, nil)
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
	ts := newToolset(t, st, "alice", nil)
	tools.InterceptEdits(ts, nil, func(ctx context.Context, b *memory.Block, e memory.Edit, reason string) (memory.Proposal, error) {
		doc, err := st.Agent("alice").Block("approval").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := doc.SetText("policy: be fair", blocks.System); err != nil {
			t.Fatal(err)
		}
		return b.Propose(ctx, e, reason)
	})
	res := call(t, ts, "propose_edit", `{"label":"approval","op":"replace_text","old":"kind","text":"very kind","reason":"r"}`)
	if !res.IsError || !strings.Contains(res.Content, `no match for "kind"`) {
		t.Fatalf("proposal after a racing rewrite: %+v", res)
	}
	if ps, err := st.Agent("alice").Block("approval").Proposals(context.Background()); err != nil || len(ps) != 0 {
		t.Fatalf("proposals %+v %v", ps, err)
	}
}
