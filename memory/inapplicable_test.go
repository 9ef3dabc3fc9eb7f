package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// TestInapplicableEditError: an edit needing approval that could never
// apply is refused with an *InapplicableEditError whose Err is why, through
// Propose and through Apply at Partner or Human permission alike, and no
// proposal is kept.
func TestInapplicableEditError(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "inapplicable.db"), nil)
	a := c.Agent("ada")
	for _, p := range []blocks.Permission{blocks.Partner, blocks.Human} {
		label := "b-" + strings.ToLower(p.String())
		if _, err := a.CreateBlock(ctx, memory.BlockSpec{Label: label, Permission: p, Value: "some text"}); err != nil {
			t.Fatal(err)
		}
		miss := memory.Edit{Op: blocks.OpReplaceText, Old: "absent", Text: "x"}
		over := memory.Edit{Op: blocks.OpAppendText, Text: strings.Repeat("y", blocks.DefaultCharLimit+1)}
		for _, tc := range []struct {
			name string
			edit memory.Edit
			why  error
		}{{"no match", miss, memory.ErrNoMatch}, {"past the limit", over, blocks.ErrLimit}} {
			for _, via := range []struct {
				name string
				do   func(memory.Edit) error
			}{
				{"Propose", func(e memory.Edit) error { _, err := a.Block(label).Propose(ctx, e, "r"); return err }},
				{"Apply", func(e memory.Edit) error { return a.Block(label).Apply(ctx, e) }},
			} {
				err := via.do(tc.edit)
				var ie *memory.InapplicableEditError
				if !errors.As(err, &ie) || !errors.Is(ie.Err, tc.why) || !errors.Is(err, tc.why) {
					t.Fatalf("%s, %s via %s: %v (%T), want an *InapplicableEditError of %v", p, tc.name, via.name, err, err, tc.why)
				}
				if !strings.Contains(err.Error(), "even if approved") || strings.Contains(ie.Err.Error(), "even if approved") {
					t.Fatalf("%s, %s via %s: error %q, cause %q", p, tc.name, via.name, err, ie.Err)
				}
			}
		}
		ps, err := a.Block(label).Proposals(ctx)
		if err != nil || len(ps) != 0 {
			t.Fatalf("%s: proposals %v, %v; want none kept", p, ps, err)
		}
	}
}
