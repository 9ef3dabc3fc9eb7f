package syncrepo_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
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
		lose func(ctx context.Context, store *memory.Store) error
	}{
		{"unshared", func(ctx context.Context, store *memory.Store) error {
			return store.Agent("bob").Block("notes").Unshare(ctx, "ada")
		}},
		{"shared with another agent instead", func(ctx context.Context, store *memory.Store) error {
			if err := store.Agent("bob").Block("notes").Unshare(ctx, "ada"); err != nil {
				return err
			}
			return store.Agent("bob").Block("notes").Share(ctx, "cy", blocks.ReadOnly)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := openStore(t)
			docID, saved := notesBlock(t, store, "bob")
			must(t, store.Agent("bob").Block("notes").Share(ctx, "ada", blocks.ReadOnly))
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
func waitRendered(t *testing.T, store *memory.Store, owner, label, want string) {
	t.Helper()
	var r string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r, _ = store.Agent(owner).Block(label).Render(context.Background()); r == want {
			return
		}
	}
	t.Fatalf("block %q of %q renders %q, want %q", label, owner, r, want)
}

// rawSync is a v1 sync message (automerge's format) carrying exactly
// changes, with no heads, needs or bloom filters: what a hostile peer can
// send, such as a change without the change it depends on.
func rawSync(changes ...[]byte) []byte {
	b := []byte{0x42, 0, 0, 0}
	b = binary.AppendUvarint(b, uint64(len(changes)))
	for _, c := range changes {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b
}

// automerge keeps a change whose dependencies it lacks in a queue, without
// bound, until they come: a peer that only ever sends such changes (for
// any document it may read, even with a read-only token) would grow the
// server's copy without end. They count against MaxHeldBytes like refused
// changes.
func TestSessionUnappliableChangesCapped(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readOnly bool
	}{
		{"read-write token", false},
		{"read-only token", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := openStore(t)
			docID, saved := notesBlock(t, store, "ada")
			p, _ := serve(t, store, &syncrepo.Options{MaxHeldBytes: 100_000, ReadOnly: tc.readOnly})
			p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
			p.recv(t)
			request(t, p, docID)
			p.recv(t)
			rnd := rand.New(rand.NewPCG(1, 2))
			letters := make([]byte, 10_000)
			for i := 0; i < 40; i++ { // 400 kB of changes, 4× the cap
				peer, err := automerge.Load(saved)
				must(t, err)
				v, err := peer.Path("content").Get()
				must(t, err)
				must(t, v.Text().Append("x"))
				_, err = peer.Commit("never sent")
				must(t, err)
				for j := range letters {
					letters[j] = 'a' + byte(rnd.IntN(26))
				}
				must(t, v.Text().Append(string(letters)))
				_, err = peer.Commit("depends on a change never sent")
				must(t, err)
				c, err := peer.Change(peer.Heads()[0])
				must(t, err)
				p.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(c.Save())})
			drain:
				for {
					select {
					case b := <-p.out:
						if m, _ := syncrepo.DecodeMessage(b); m.Type == syncrepo.TypeDocUnavailable {
							if r, _ := store.Agent("ada").Block("notes").Render(ctx); r != "one\n" {
								t.Fatalf("store %q", r)
							}
							return
						}
					case <-time.After(50 * time.Millisecond):
						break drain
					}
				}
			}
			t.Fatal("the document is still available after 400 kB of changes that cannot apply (cap 100 kB)")
		})
	}
}

// A change a peer sends with a commit message naming another agent, or the
// system, is refused; any other is merged, and the store's history names
// the token's agent as its maker (the message is the peer's word only).
func TestSessionForgedAttribution(t *testing.T) {
	for _, tc := range []struct {
		name, message string
		refused       bool
	}{
		{"another agent", `{"a":"bob","op":"append"}`, true},
		{"the system", `{"a":"system","op":"rebase"}`, true},
		{"its own agent", `{"a":"ada","op":"append"}`, false},
		{"free text", "fix a typo", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := openStore(t)
			docID, saved := notesBlock(t, store, "ada")
			pp := newPipePeer(t, store, nil, docID, saved)
			pp.mu.Lock()
			v, err := pp.doc.Path("content").Get()
			must(t, err)
			must(t, v.Text().Append("two\n"))
			_, err = pp.doc.Commit(tc.message)
			must(t, err)
			pp.sendSync(syncrepo.TypeSync)
			pp.mu.Unlock()
			if tc.refused {
				if !pp.waitText("one\n") {
					t.Fatalf("the peer did not converge back: %q", pp.text())
				}
				time.Sleep(100 * time.Millisecond)
				if r, _ := store.Agent("ada").Block("notes").Render(ctx); r != "one\n" {
					t.Errorf("store %q", r)
				}
			} else {
				waitRendered(t, store, "ada", "notes", "one\ntwo\n")
			}
			h, err := store.Agent("ada").Block("notes").History(ctx)
			must(t, err)
			// Whatever the message says, a merged change is the token's
			// agent's merge.
			for i, c := range h {
				if i >= 2 && (c.Actor != "ada" || c.Op != blocks.OpMerge || c.PeerMessage != tc.message) {
					t.Errorf("change %d of the history is %s/%s (peer message %q), want ada/merge", i, c.Actor, c.Op, c.PeerMessage)
				}
			}
		})
	}
}

// failingStore fails its next merges the way a store that
// cannot write fails (a database down or busy, a failed commit), not the
// way it refuses an edit.
type failingStore struct {
	mu    sync.Mutex
	fails int
}

func (f *failingStore) merge(ctx context.Context, b *memory.Block, data []byte) error {
	f.mu.Lock()
	fail := f.fails > 0
	if fail {
		f.fails--
	}
	f.mu.Unlock()
	if fail {
		return fmt.Errorf("memory: merge changes into block %q: %w: database is locked", b.Label(), memory.ErrPersist)
	}
	return b.Merge(ctx, data)
}

// A store that fails to write is no refusal: the peer's edit must not be
// taken back by a counter-change (which, merged later, would delete the
// edit for good). The session ends instead, and the peer, reconnecting,
// sends the edit again.
func TestSessionStoreFailureIsNoRefusal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		private bool // a refused edit first moved the session to a private copy
	}{
		{"shared copy", false},
		{"private copy", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t)
			docID, saved := notesBlock(t, store, "ada")
			flaky := &failingStore{}
			pp := newPipePeer(t, store, nil, docID, saved, syncrepo.Hooks{Merge: flaky.merge})
			if !pp.waitText("one\n") {
				t.Fatal("no first sync")
			}
			if tc.private {
				pp.appendText("nul \x00\n")
				if !pp.waitText("one\n") {
					t.Fatalf("a refused edit was not taken back: %q", pp.text())
				}
			}
			flaky.mu.Lock()
			flaky.fails = 1
			flaky.mu.Unlock()
			pp.appendText("two\n")
			time.Sleep(500 * time.Millisecond)
			if got := pp.text(); got != "one\ntwo\n" {
				t.Fatalf("after a store failure the peer's edit was taken back: %q", got)
			}
			pp.mu.Lock()
			saved = pp.doc.Save()
			pp.mu.Unlock()
			again := newPipePeer(t, store, nil, docID, saved, syncrepo.Hooks{Merge: flaky.merge}) // the peer reconnects
			waitRendered(t, store, "ada", "notes", "one\ntwo\n")
			if got := again.text(); got != "one\ntwo\n" {
				t.Fatalf("after reconnecting the peer has %q", got)
			}
		})
	}
}
