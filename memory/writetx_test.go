package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// An approval commits with the approved edit in one transaction, also in
// write-back mode: another process sees both at once, before any Flush.
func TestApprovalCommitsWithTheEdit(t *testing.T) {
	for _, writeBack := range []bool{false, true} {
		t.Run(map[bool]string{false: "write-through", true: "write-back"}[writeBack], func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "m.db")
			a, err := memory.Open(ctx, fresh(path), &memory.Options{WriteBack: writeBack})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := memory.Open(ctx, fresh(path), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if _, err := a.Agent("human").CreateBlock(ctx, memory.BlockSpec{Label: "prefs", Value: "tea", Permission: blocks.Admin}); err != nil {
				t.Fatal(err)
			}
			if err := a.Agent("human").Block("prefs").Share(ctx, "agent", blocks.Human); err != nil {
				t.Fatal(err)
			}
			p, err := a.Agent("agent").Shared("human", "prefs").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: ", coffee"}, "asked")
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Agent("human:h").ApproveProposal(ctx, p.ID); err != nil {
				t.Fatal(err)
			}
			if r, err := b.Agent("human").Block("prefs").Render(ctx); err != nil || r != "tea, coffee" {
				t.Fatalf("another process reads %q, %v; want the approved edit", r, err)
			}
			ps, err := b.Agent("human").Block("prefs").Proposals(ctx)
			if err != nil || len(ps) != 1 || ps[0].Status != "approved" {
				t.Fatalf("another process lists %+v, %v; want the proposal approved", ps, err)
			}
		})
	}
}

// A view approved with a decision this store did not make writes nothing:
// the caller meant the decision to commit with the edit, and the store
// cannot.
func TestForeignApprovalDecisionRefused(t *testing.T) {
	ctx := context.Background()
	s, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "m.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "a"}); err != nil {
		t.Fatal(err)
	}
	view, err := s.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		decision any
		want     error
		text     string
	}{
		{"someone else's", memory.ErrInvalidArgument, "a"},
		{nil, nil, "a b"},
	} {
		err := view.Approved(tc.decision).AppendText(" b", blocks.Agent)
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Fatalf("decision %v: err = %v, want %v", tc.decision, err, tc.want)
		}
		if r, _ := s.Agent("ada").Block("notes").Render(ctx); r != tc.text {
			t.Fatalf("decision %v: block reads %q, want %q", tc.decision, r, tc.text)
		}
	}
}
