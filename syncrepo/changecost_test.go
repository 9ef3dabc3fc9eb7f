package syncrepo_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// peerEdits returns the change chunks a peer that loaded saved makes by
// calling edit once per commit it wants (commits of them).
func peerEdits(t *testing.T, saved []byte, commits int, edit func(root *automerge.Map, i int) error) [][]byte {
	t.Helper()
	peer, err := automerge.Load(saved)
	must(t, err)
	var out [][]byte
	for i := range commits {
		heads := peer.Heads()
		must(t, edit(peer.RootMap(), i))
		_, err := peer.Commit("")
		must(t, err)
		chs, err := peer.Changes(heads...)
		must(t, err)
		out = append(out, automerge.SaveChanges(chs))
	}
	return out
}

// rleBomb is a change chunk whose action column is one run of n
// operations: a few bytes that describe n operations (its checksum is
// wrong, which automerge would only find after decoding).
func rleBomb(n int64) []byte {
	action := binary.AppendVarint(nil, n) // a run of n…
	action = append(action, 1)            // …of action 1
	body := []byte{0, 1, 0xaa, 1, 1, 0, 0, 0, 1, 4<<4 | 2, byte(len(action))}
	body = append(body, action...)
	b := []byte{0x85, 0x6f, 0x4a, 0x83, 0, 0, 0, 0, 1}
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// A peer's changes that ask far more of a block than its character
// limit allows (here a block of the default 5,000) are refused from
// their size before automerge applies any of them: the peer gets the
// Refusal and doc-unavailable within a fraction of a second, the store
// is unchanged, and the session goes on (another document still syncs).
// The same for a read-only token, whose changes are never merged but were
// applied to a copy to take them back.
func TestSessionRefusesCostlyChangesUnapplied(t *testing.T) {
	store := openStore(t)
	docID, saved := notesBlock(t, store, "ada")
	text := func(r *automerge.Map) *automerge.Text {
		v, err := r.Get("content")
		must(t, err)
		return v.Text()
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	bombs := []struct {
		name    string
		changes [][]byte
	}{
		{"300,000 characters in one change", peerEdits(t, saved, 1, func(r *automerge.Map, _ int) error {
			return text(r).Append(strings.Repeat("x", 300_000))
		})},
		{"30,000 map keys", peerEdits(t, saved, 1, func(r *automerge.Map, _ int) error {
			for i := range 30_000 {
				if err := r.Set(fmt.Sprint("k", i), int64(i)); err != nil {
					return err
				}
			}
			return nil
		})},
		{"2,000 changes of 20 characters in one message", peerEdits(t, saved, 2_000, func(r *automerge.Map, _ int) error {
			b := make([]byte, 20)
			for i := range b {
				b[i] = 'a' + byte(rnd.IntN(26))
			}
			return text(r).Append(string(b))
		})},
		{"a change describing a trillion operations", [][]byte{rleBomb(1e12)}},
	}
	for _, readOnly := range []bool{false, true} {
		for _, b := range bombs {
			t.Run(fmt.Sprintf("%s/read-only=%v", b.name, readOnly), func(t *testing.T) {
				p, _ := serve(t, store, &syncrepo.Options{ReadOnly: readOnly})
				p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
				p.recv(t)
				start := time.Now()
				p.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(b.changes...)})
				var refused bool
				for {
					m := p.recv(t)
					if m.Type == syncrepo.TypeEphemeral {
						refused = true
						continue
					}
					if m.Type == syncrepo.TypeDocUnavailable {
						break
					}
					t.Fatalf("got %s, want a refusal and doc-unavailable", m.Type)
				}
				took := time.Since(start)
				if !refused {
					t.Error("no Refusal before doc-unavailable")
				}
				if took > 500*time.Millisecond {
					t.Errorf("refusing took %v", took)
				}
				if r, _ := store.Agent("ada").Block("notes").Render(context.Background()); r != "one\n" {
					t.Fatalf("store %q", r)
				}
				// The session goes on: the document syncs again when asked.
				request(t, p, docID)
				if m := p.recv(t); m.Type != syncrepo.TypeSync {
					t.Fatalf("after the refusal: %s, want sync", m.Type)
				}
			})
		}
	}
}

// What the server holds for a credential's peers (refused changes,
// changes waiting for dependencies, private copies) is capped across
// all its connections by a shared Budget, not per connection only: three
// connections each under their own cap together pass the credential's,
// and the one that passes it loses the document.
func TestSessionBudgetSharedAcrossConnections(t *testing.T) {
	store := openStore(t)
	docID, saved := notesBlock(t, store, "ada")
	budget := syncrepo.NewBudget(0, 0, 150_000)
	unavailable := 0
	rnd := rand.New(rand.NewPCG(1, 2))
	letters := make([]byte, 10_000)
	for conn := range 3 {
		p, _ := serve(t, store, &syncrepo.Options{MaxHeldBytes: 100_000, Budget: budget})
		p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: fmt.Sprint("peer", conn), SupportedProtocolVersions: []string{"1"}})
		p.recv(t)
		request(t, p, docID)
		p.recv(t)
	sends:
		for range 6 { // 60 kB of changes that cannot apply, under the connection's 100 kB
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
			for {
				select {
				case b := <-p.out:
					if m, _ := syncrepo.DecodeMessage(b); m.Type == syncrepo.TypeDocUnavailable {
						unavailable++
						break sends
					}
					continue
				case <-time.After(100 * time.Millisecond):
				}
				break
			}
		}
	}
	if unavailable == 0 {
		t.Fatalf("three connections held %d bytes under a shared cap of 150,000 and kept the document", budget.Held())
	}
	if budget.Held() > 150_000+20_000 {
		t.Errorf("the budget holds %d bytes", budget.Held())
	}
}

// Joining a document no session holds copies the whole block for the
// joining credential, which is charged its size as for a private copy:
// a token that joins a large block, leaves and joins again pays each
// time. Joining a copy another session holds costs nothing, even with
// the budget spent.
func TestJoinCopyChargedToTheCredential(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	if _, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "big", Value: strings.Repeat("lorem ipsum\n", 40_000/12), CharLimit: 50_000}); err != nil {
		t.Fatal(err)
	}
	id, err := store.Agent("ada").Block("big").DocumentID(ctx)
	must(t, err)
	bigID := syncrepo.EncodeDocumentID(id)
	smallID, _ := notesBlock(t, store, "ada")
	// 20,000 operations a second: the big block's copy leaves the budget
	// two seconds in debt.
	budget, mirrors := syncrepo.NewBudget(20_000, 1_000, 0), syncrepo.NewMirrors()
	join := func(name, docID string) (*pipe, time.Duration) {
		p, _ := serve(t, store, &syncrepo.Options{Budget: budget, Mirrors: mirrors})
		p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: name, SupportedProtocolVersions: []string{"1"}})
		p.recv(t)
		start := time.Now()
		request(t, p, docID)
		if m := p.recv(t); m.Type != syncrepo.TypeSync {
			t.Fatalf("%s: %s, want sync", name, m.Type)
		}
		return p, time.Since(start)
	}
	_, first := join("first", bigID)
	_, held := join("held", bigID)
	_, small := join("small", smallID)
	t.Logf("first join of the big block %v; a join of its held copy %v; then a join of a small block %v", first, held, small)
	if held > 500*time.Millisecond {
		t.Errorf("joining a copy another session holds waited %v: it costs nothing", held)
	}
	if small < time.Second {
		t.Errorf("a join after copying a 40,000-character block waited %v, want about 2 s: the copy was not charged", small)
	}
}

// A session waiting for its credential's budget stops waiting once its
// peer's connection closes: it ends at once, with the connection's end,
// and makes no copy for a peer that is gone.
func TestClosedConnectionStopsWaitingForTheBudget(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	if _, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "big", Value: strings.Repeat("lorem ipsum\n", 60_000/12), CharLimit: 100_000}); err != nil {
		t.Fatal(err)
	}
	id, err := store.Agent("ada").Block("big").DocumentID(ctx)
	must(t, err)
	smallID, _ := notesBlock(t, store, "ada")
	// 20,000 operations a second: the big block's copy leaves the budget
	// three seconds in debt.
	budget, mirrors := syncrepo.NewBudget(20_000, 1_000, 0), syncrepo.NewMirrors()
	opts := &syncrepo.Options{Budget: budget, Mirrors: mirrors}
	first, _ := serve(t, store, opts)
	first.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "first", SupportedProtocolVersions: []string{"1"}})
	first.recv(t)
	request(t, first, syncrepo.EncodeDocumentID(id))
	if m := first.recv(t); m.Type != syncrepo.TypeSync {
		t.Fatalf("first: %s, want sync", m.Type)
	}
	second, done := serve(t, store, opts)
	second.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "second", SupportedProtocolVersions: []string{"1"}})
	second.recv(t)
	request(t, second, smallID)
	time.Sleep(200 * time.Millisecond) // the session waits for the budget
	start := time.Now()
	close(second.in)
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("the session ended with %v, want the connection's end (EOF)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the session ended %v after its connection closed: it waited for the budget", took)
	}
	if n := mirrors.Len(); n != 1 {
		t.Errorf("%d copies held, want 1 (the big block's): a copy was made for a peer that was gone", n)
	}
}
