package builder_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
)

// listSpy is an agent's handle that counts block listings.
type listSpy struct {
	*memory.Agent
	lists atomic.Int64
}

func (s *listSpy) Blocks(ctx context.Context) ([]memory.BlockMeta, error) {
	s.lists.Add(1)
	return s.Agent.Blocks(ctx)
}

func (s *listSpy) SharedBlocks(ctx context.Context) ([]memory.SharedBlock, error) {
	s.lists.Add(1)
	return s.Agent.SharedBlocks(ctx)
}

// TestBlockListCacheSeesOtherProcesses: the builder caches an agent's block
// listings under memory.BlocksStamp. A warm build lists nothing; every kind
// of change made through another Cache on the same file (as another process
// would) is in the next build, own blocks and shared ones alike.
func TestBlockListCacheSeesOtherProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two.db")
	open := func() *memory.Store { return openFile(t, path) }
	here, there := open(), open()
	mustBlock(t, here, "a", memory.BlockSpec{Label: "persona", Type: blocks.Core, Permission: blocks.Admin, Value: "I am A."})
	mustBlock(t, here, "a", memory.BlockSpec{Label: "plan", Type: blocks.Working, Permission: blocks.Admin, Value: "step one"})
	mustBlock(t, here, "b", memory.BlockSpec{Label: "board", Type: blocks.Core, Permission: blocks.Admin, Value: "team board"})

	spy := &listSpy{Agent: here.Agent("a")}
	b := builder.New(spy, builder.DefaultConfig()).WithBaseInstructions("Base.")
	check := func(what string, lists int64, want, wantNot []string) {
		t.Helper()
		before := spy.lists.Load()
		sys := build(t, b).System
		if n := spy.lists.Load() - before; n != lists {
			t.Fatalf("%s: %d listings, want %d", what, n, lists)
		}
		for _, w := range want {
			if !strings.Contains(sys, w) {
				t.Fatalf("%s: system prompt lacks %q:\n%s", what, w, sys)
			}
		}
		for _, w := range wantNot {
			if strings.Contains(sys, w) {
				t.Fatalf("%s: system prompt still has %q:\n%s", what, w, sys)
			}
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check("cold", 2, []string{"I am A."}, []string{"step one", "team board"})
	check("warm", 0, []string{"I am A."}, nil)

	// Changes through the other Cache, one kind at a time.
	must(there.Agent("a").Block("persona").Append(ctx, " I plan."))
	check("content edit elsewhere", 2, []string{"I am A. I plan."}, nil)
	check("warm again", 0, []string{"I am A. I plan."}, nil)
	must(there.Agent("a").Block("plan").SetPinned(ctx, true))
	check("pin elsewhere", 2, []string{"step one"}, nil)
	must(there.Agent("b").Block("board").Share(ctx, "a", blocks.Append))
	check("share elsewhere", 2, []string{`<block:board permission="Append" shared_from="b">`, "team board"}, nil)
	must(there.Agent("b").Block("board").Append(ctx, " (updated)"))
	check("owner edits the shared block elsewhere", 2, []string{"team board (updated)"}, nil)
	must(there.Agent("b").Block("board").Share(ctx, "a", blocks.ReadWrite))
	check("re-share elsewhere", 2, []string{`<block:board permission="ReadWrite" shared_from="b">`}, []string{`permission="Append"`})
	must(there.Agent("b").Block("board").Unshare(ctx, "a"))
	check("unshare elsewhere", 2, nil, []string{"team board"})
	must(there.Agent("a").Block("plan").Delete(ctx))
	check("delete elsewhere", 2, nil, []string{"step one"})
	_, err := there.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "plan", Type: blocks.Working, Pinned: true, Permission: blocks.Admin, Value: "step two"})
	must(err)
	check("create elsewhere", 2, []string{"step two"}, nil)
	must(there.Agent("a").Block("plan").SetType(ctx, blocks.Core))
	check("reconfigure elsewhere", 2, []string{"step two"}, nil)
	check("warm at the end", 0, []string{"I am A. I plan.", "step two"}, nil)

	// Changes in this process (through the builder's own store) too.
	must(here.Agent("a").Block("plan").Append(ctx, " and three"))
	check("local edit", 2, []string{"step two and three"}, nil)
	// Activity elsewhere that the agent cannot see lists nothing.
	must(there.Agent("b").Block("board").Append(ctx, " again"))
	_, err = there.Agent("b").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "x", Content: "hi"})
	must(err)
	check("unrelated change", 0, nil, nil)
}
