package memory_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
)

// jsPeer installs automerge JS (testdata/jspeer, the version its
// package-lock pins) into a temporary copy and returns a function that runs
// the peer: it loads a saved block document, appends each text to it as
// one change, and returns what Automerge.saveIncremental gave after each. Without node
// and npm the test is skipped, except under CI, where they are required.
func jsPeer(t *testing.T) func(doc []byte, texts ...string) [][]byte {
	t.Helper()
	node, dir := testenv.NodePackage(t, filepath.Join("testdata", "jspeer"), "package.json", "package-lock.json", "peer.js")
	return func(doc []byte, texts ...string) [][]byte {
		t.Helper()
		in, out := filepath.Join(dir, "in.bin"), filepath.Join(dir, "out.bin")
		if err := os.WriteFile(in, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(node, append([]string{"peer.js", in, out}, texts...)...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("automerge JS peer: %v\n%s", err, b)
		}
		saves := make([][]byte, len(texts))
		for i := range texts {
			name := out
			if i > 0 {
				name = fmt.Sprintf("%s.%d", out, i)
			}
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			saves[i] = b
		}
		return saves
	}
}

// TestJSPeerAcrossEpochs: a real automerge JS peer's change merges into a
// block; after the block is rebased onto a new epoch, a change the peer
// made on its old copy is refused with an error naming the epoch (merging
// it would duplicate the text), and the same edit made on the current
// document merges.
func TestJSPeerAcrossEpochs(t *testing.T) {
	peer := jsPeer(t)
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "js.db"), nil)
	doc, err := createBlockDoc(ctx, c.Agent("a"), memory.BlockSpec{Label: "notes", Value: "from go\n"})
	if err != nil {
		t.Fatal(err)
	}
	epoch0, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("a").Block("notes").Merge(ctx, peer(epoch0, "from js\n")[0]); err != nil {
		t.Fatalf("merging the JS peer's change: %v", err)
	}
	if r, _ := c.Agent("a").Block("notes").Render(ctx); r != "from go\nfrom js\n" {
		t.Fatalf("after the JS change: %q", r)
	}
	if err := c.Agent("a").Block("notes").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	// The peer still holds epoch 0.
	err = c.Agent("a").Block("notes").Merge(ctx, peer(epoch0, "late\n")[0])
	if err == nil || !strings.Contains(err.Error(), "epoch 1") || !(errors.Is(err, blocks.ErrUnrelated) || errors.Is(err, blocks.ErrCorrupt)) {
		t.Fatalf("merging a change made on epoch 0: %v, want a refusal naming epoch 1", err)
	}
	t.Logf("refused: %v", err)
	if r, _ := c.Agent("a").Block("notes").Render(ctx); r != "from go\nfrom js\n" {
		t.Fatalf("a refused merge changed the block: %q", r)
	}
	// Reloaded, the peer edits the current epoch.
	cur, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("a").Block("notes").Merge(ctx, peer(cur, "late\n")[0]); err != nil {
		t.Fatalf("merging the JS peer's change on epoch 1: %v", err)
	}
	if r, _ := c.Agent("a").Block("notes").Render(ctx); r != "from go\nfrom js\nlate\n" {
		t.Fatalf("after the JS change on the new epoch: %q", r)
	}
}

// TestJSPeerIncrementalSaves: a JS peer that keeps the document syncs
// each edit by its incremental save; from the second on a save holds only
// the new change, built on changes the save does not carry (automerge JS
// 2.2.9 writes even a 10 KB change uncompressed; blocks' tests cover the
// compressed form). Each merges, in order; a save merged before the one it
// builds on is refused as unrelated.
func TestJSPeerIncrementalSaves(t *testing.T) {
	peer := jsPeer(t)
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "js.db"), nil)
	doc, err := createBlockDoc(ctx, c.Agent("a"), memory.BlockSpec{Label: "notes", Value: "from go\n", CharLimit: 20_000})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("a longer note from the JS peer, line after line; ", 200) + "\n"
	saves := peer(saved, "one\n", "two\n", big)
	if err := c.Agent("a").Block("notes").Merge(ctx, saves[2]); !errors.Is(err, blocks.ErrUnrelated) {
		t.Fatalf("a save merged before the one it builds on: %v, want ErrUnrelated", err)
	}
	for i, s := range saves {
		if err := c.Agent("a").Block("notes").Merge(ctx, s); err != nil {
			t.Fatalf("merging the JS peer's save %d (%d bytes, chunk type %d): %v", i, len(s), s[8], err)
		}
	}
	want := "from go\none\ntwo\n" + big
	if r, _ := c.Agent("a").Block("notes").Render(ctx); r != want {
		t.Fatalf("after the JS peer's saves: %d chars, want %d", len(r), len(want))
	}
	t.Logf("saves of %d, %d and %d bytes, chunk types %d, %d, %d", len(saves[0]), len(saves[1]), len(saves[2]), saves[0][8], saves[1][8], saves[2][8])
}
