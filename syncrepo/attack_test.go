package syncrepo_test

import (
	"context"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// A peer whose agent lost read access to a block (unshared, deleted) gets
// nothing more of it, even before the session's next poll: the shared copy
// may already hold the owner's edits made after the unshare (another
// session caught it up), and a sync message must not hand them over.
func TestSessionReadAccessLostMidConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(ctx context.Context, store *memory.Cache) error
	}{
		{"unshared", func(ctx context.Context, store *memory.Cache) error {
			return store.UnshareBlock(ctx, "bob", "notes", "ada")
		}},
		{"shared with another agent instead", func(ctx context.Context, store *memory.Cache) error {
			if err := store.UnshareBlock(ctx, "bob", "notes", "ada"); err != nil {
				return err
			}
			return store.ShareBlock(ctx, "bob", "notes", "cy", blocks.ReadOnly)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := openStore(t)
			doc, err := store.CreateBlock(ctx, "bob", memory.BlockSpec{Label: "notes", Value: "one\n"})
			must(t, err)
			must(t, store.ShareBlock(ctx, "bob", "notes", "ada", blocks.ReadOnly))
			saved, _ := doc.Save()
			id, err := store.DocumentID(ctx, "bob", "", "notes")
			must(t, err)
			docID := syncrepo.EncodeDocumentID(id)
			mirrors := syncrepo.NewMirrors()
			// ada's session polls rarely so that the test does not race
			// with it: what is checked is the path of a sync message.
			reader := newPipePeerAs(t, store, "ada", &syncrepo.Options{Poll: time.Hour, Mirrors: mirrors}, docID, saved)
			owner := newPipePeerAs(t, store, "bob", &syncrepo.Options{Poll: 20 * time.Millisecond, Mirrors: mirrors}, docID, saved)
			if !reader.waitText("one\n") {
				t.Fatalf("first sync: %q", reader.text())
			}
			must(t, tc.lose(ctx, store))
			owner.appendText("secret\n")
			waitRendered(t, store, "bob", "notes", "one\nsecret\n")
			time.Sleep(100 * time.Millisecond) // the owner's session has caught the shared copy up
			reader.mu.Lock()
			reader.ss = automerge.NewSyncState(reader.doc) // a reconnecting peer's first message
			reader.sendSync(syncrepo.TypeSync)
			reader.mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			if got := reader.text(); got != "one\n" {
				t.Fatalf("a peer whose agent may no longer read the block got %q", got)
			}
		})
	}
}

// waitRendered waits until the block of owner renders as want.
func waitRendered(t *testing.T, store *memory.Cache, owner, label, want string) {
	t.Helper()
	var r string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r, _ = store.RenderedContent(context.Background(), owner, label); r == want {
			return
		}
	}
	t.Fatalf("block %q of %q renders %q, want %q", label, owner, r, want)
}
