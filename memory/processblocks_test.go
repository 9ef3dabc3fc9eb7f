package memory_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// Two processes × 4 goroutines, each goroutine appending to a block of
// its own (on PostgreSQL these run in parallel), to one block they all
// share (these take turns), and adding archival entries and messages for
// an agent of its own and for one agent they all share: every line,
// entry and message is there exactly once afterwards, and each agent's
// messages carry one unbroken run of sequence numbers per batch.

const (
	blockProcs   = 2
	blockWriters = 4
	blockRounds  = 240 / raceScale
)

func TestTwoProcessesManyBlocks(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	runProcessesManyBlocks(t, filepath.Join(t.TempDir(), "blocks.db"))
}

func TestPostgresProcessesManyBlocks(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	runProcessesManyBlocks(t, pgtest.Start(t).NewDatabase(t))
}

func ownLabel(p, g int) string { return fmt.Sprintf("own-p%d-g%d", p, g) }
func ownAgent(p, g int) string { return fmt.Sprintf("agent-p%d-g%d", p, g) }

func runProcessesManyBlocks(t *testing.T, path string) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: "board", CharLimit: blocks.MaxCharLimit}); err != nil {
		t.Fatal(err)
	}
	for p := range blockProcs {
		for g := range blockWriters {
			if _, err := c.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: ownLabel(p, g), CharLimit: blocks.MaxCharLimit}); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Close()
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for p := range blockProcs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRoleBlockWriter$", "-test.v")
		cmd.Env = childEnv("blockwriter", "ENGRAM_DB="+path, "ENGRAM_PROC="+strconv.Itoa(p))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d failed: %v\n%s", p, err, outs[p])
		}
	}
	c, err = memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lines := func(label string) map[string]int {
		t.Helper()
		doc, err := c.Agent("owner").Block(label).Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := doc.Text()
		if r, _ := c.Agent("owner").Block(label).Render(ctx); r != text {
			t.Fatalf("block %s: stored rendering differs from the document", label)
		}
		counts := map[string]int{}
		for _, l := range strings.Split(text, "\n") {
			if l != "" {
				counts[l]++
			}
		}
		return counts
	}
	board := lines("board")
	sharedEntries := map[string]int{}
	shared, err := c.Agent("shared").Archival().List(ctx, &memory.ArchivalQuery{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range shared {
		sharedEntries[e.Content]++
	}
	checkSeqs := func(agent string, want int) {
		t.Helper()
		msgs, err := c.Agent(agent).Messages().List(ctx, &memory.MessageQuery{Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		next := map[string]int{}
		seen := map[string]bool{}
		for _, m := range msgs {
			if seen[m.Content] {
				t.Errorf("%s: message %q twice", agent, m.Content)
			}
			seen[m.Content] = true
			if want := max(next[m.BatchID], 1); m.Seq != want {
				t.Errorf("%s: batch %s: seq %d after %d", agent, m.BatchID, m.Seq, want-1)
			}
			next[m.BatchID] = m.Seq + 1
		}
		if len(msgs) != want {
			t.Errorf("%s: %d messages, want %d", agent, len(msgs), want)
		}
	}
	for p := range blockProcs {
		for g := range blockWriters {
			own := lines(ownLabel(p, g))
			if len(own) != blockRounds {
				t.Errorf("block %s: %d distinct lines, want %d", ownLabel(p, g), len(own), blockRounds)
			}
			for i := range blockRounds {
				l := lineOf(p, g, i)
				if own[l] != 1 {
					t.Errorf("block %s: line %s present %d times", ownLabel(p, g), l, own[l])
				}
				if i%4 == 0 && board[l] != 1 {
					t.Errorf("board: line %s present %d times", l, board[l])
				}
				if i%6 == 0 && sharedEntries[l] != 1 {
					t.Errorf("shared archival: entry %s present %d times", l, sharedEntries[l])
				}
			}
			entries, err := c.Agent(ownAgent(p, g)).Archival().List(ctx, &memory.ArchivalQuery{Limit: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if want := (blockRounds + 2) / 3; len(entries) != want {
				t.Errorf("%s: %d archival entries, want %d", ownAgent(p, g), len(entries), want)
			}
			checkSeqs(ownAgent(p, g), (blockRounds+4)/5)
		}
	}
	if want := blockProcs * blockWriters * ((blockRounds + 3) / 4); len(board) != want {
		t.Errorf("board: %d distinct lines, want %d", len(board), want)
	}
	checkSeqs("shared", blockProcs*blockWriters*((blockRounds+4)/5))
}

// TestRoleBlockWriter is the child side of TestTwoProcessesManyBlocks.
func TestRoleBlockWriter(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "blockwriter" {
		t.Skip("child role")
	}
	ctx := context.Background()
	p, _ := strconv.Atoi(os.Getenv("ENGRAM_PROC"))
	c, err := memory.Open(ctx, fresh(os.Getenv("ENGRAM_DB")), childOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for g := range blockWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range blockRounds {
				l := lineOf(p, g, i)
				err := c.Agent("owner").Block(ownLabel(p, g)).Append(ctx, l+"\n")
				if err == nil && i%4 == 0 {
					err = c.Agent("owner").Block("board").Append(ctx, l+"\n")
				}
				if err == nil && i%3 == 0 {
					_, err = c.Agent(ownAgent(p, g)).Archival().Insert(ctx, memory.ArchivalEntry{Content: l})
				}
				if err == nil && i%6 == 0 {
					_, err = c.Agent("shared").Archival().Insert(ctx, memory.ArchivalEntry{Content: l})
				}
				if err == nil && i%5 == 0 {
					_, err = c.Agent(ownAgent(p, g)).Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, Content: l, BatchID: "b"}})
				}
				if err == nil && i%5 == 0 {
					_, err = c.Agent("shared").Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, Content: l, BatchID: fmt.Sprint("b", i%2)}})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
