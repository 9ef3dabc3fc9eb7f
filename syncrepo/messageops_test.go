package syncrepo_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/amchunk"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// wideBlock creates ada's block "wide" of the largest character limit,
// reading "one\n", and returns its document id and saved document.
func wideBlock(t *testing.T, store *memory.Store) (docID string, saved []byte) {
	t.Helper()
	ctx := context.Background()
	blk, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "wide", Value: "one\n", CharLimit: blocks.MaxCharLimit})
	must(t, err)
	doc, err := blk.Doc(ctx)
	must(t, err)
	saved, err = doc.Save()
	must(t, err)
	id, err := store.Agent("ada").Block("wide").DocumentID(ctx)
	must(t, err)
	return syncrepo.EncodeDocumentID(id), saved
}

// appendEdits are a peer's changes on saved, one per text appended.
func appendEdits(t *testing.T, saved []byte, texts ...string) [][]byte {
	t.Helper()
	return peerEdits(t, saved, len(texts), func(r *automerge.Map, i int) error {
		v, err := r.Get("content")
		if err != nil {
			return err
		}
		return v.Text().Append(texts[i])
	})
}

// outcome reads the session's answers to a sync message until it
// falls quiet: whether it refused the document (a Refusal, then
// doc-unavailable) and the refusal's text.
func outcome(t *testing.T, p *pipe) (unavailable bool, refusal string) {
	t.Helper()
	for {
		select {
		case b := <-p.out:
			m, err := syncrepo.DecodeMessage(b)
			must(t, err)
			switch m.Type {
			case syncrepo.TypeEphemeral:
				refusal = string(m.Data)
			case syncrepo.TypeDocUnavailable:
				return true, refusal
			}
		case <-time.After(time.Second):
			return false, refusal
		}
	}
}

func wideText(t *testing.T, store *memory.Store) string {
	t.Helper()
	r, err := store.Agent("ada").Block("wide").Render(context.Background())
	must(t, err)
	return r
}

// One sync message may apply at most MaxMessageOps operations, however
// large its block's limit: a bigger one is refused unapplied. Changes
// kept waiting for their dependencies count toward the message that
// completes them (automerge applies them together), and a peer cannot
// keep more waiting than one message may apply.
func TestSessionCapsOneMessagesOperations(t *testing.T) {
	const most = 5_000
	x := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name string
		// send are the messages, each of the changes of edits at
		// these indexes, in order.
		edits []string
		send  [][]int
		// refusedAt is the message the document becomes unavailable at
		// (-1: none), and stored what the block reads at the end.
		refusedAt int
		stored    string
	}{
		{name: "one change within the cap", edits: []string{x(4_000)}, send: [][]int{{0}}, refusedAt: -1, stored: "one\n" + x(4_000)},
		{name: "one change past the cap", edits: []string{x(6_000)}, send: [][]int{{0}}, refusedAt: 0, stored: "one\n"},
		{name: "changes within the cap one by one", edits: []string{x(3_000), x(3_000)}, send: [][]int{{0}, {1}}, refusedAt: -1, stored: "one\n" + x(6_000)},
		{name: "changes past the cap in one message", edits: []string{x(3_000), x(3_000)}, send: [][]int{{0, 1}}, refusedAt: 0, stored: "one\n"},
		{name: "changes waiting for the one that completes them past the cap", edits: []string{x(2_000), x(2_000), x(2_000)}, send: [][]int{{1, 2}, {0}}, refusedAt: 1, stored: "one\n"},
		{name: "more waiting than one message may apply", edits: []string{"y", x(3_000), x(3_000)}, send: [][]int{{1}, {2}}, refusedAt: 1, stored: "one\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t)
			docID, saved := wideBlock(t, store)
			changes := appendEdits(t, saved, tc.edits...)
			p, _ := serve(t, store, &syncrepo.Options{MaxMessageOps: most})
			p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
			p.recv(t)
			refusedAt := -1
			for i, idx := range tc.send {
				var cs [][]byte
				for _, k := range idx {
					cs = append(cs, changes[k])
				}
				p.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(cs...)})
				if gone, why := outcome(t, p); gone {
					refusedAt = i
					if !strings.Contains(why, "one message may apply at most 5000 operations") {
						t.Errorf("message %d: the refusal does not name the cap: %q", i, why)
					}
					break
				}
			}
			if refusedAt != tc.refusedAt {
				t.Errorf("refused at message %d, want %d", refusedAt, tc.refusedAt)
			}
			if got := wideText(t, store); got != tc.stored {
				t.Errorf("the block holds %d characters, want %d", len(got), len(tc.stored))
			}
		})
	}
}

// A peer whose changes the store refuses (each appends text within the
// cap and sets a root key the block's layout has no room for) keeps them
// held on its private copy, and every later message's merge hands the
// store all of them again with the new one: past an allowance of one
// cap (an honest peer's one refused edit) they count toward each
// message's cap, so they cannot pile up (before, the twelfth message
// handed the store 27 times the cap).
func TestSessionHeldChangesCountTowardTheCap(t *testing.T) {
	const most = 5_000
	store := openStore(t)
	docID, saved := wideBlock(t, store)
	var merged atomic.Int64 // operations handed to the store's merge during the current message
	var worst int64
	merge := func(ctx context.Context, b *memory.Block, data []byte) error {
		if c, err := amchunk.Measure(data, amchunk.Limits{}); err == nil {
			merged.Add(c.Ops + c.Refs + c.Changes)
		}
		return b.Merge(ctx, data)
	}
	p, _ := serve(t, store, &syncrepo.Options{MaxMessageOps: most}, syncrepo.Hooks{Merge: merge})
	p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
	p.recv(t)
	peer, err := automerge.Load(saved)
	must(t, err)
	gone := false
	for i := 0; i < 12 && !gone; i++ {
		heads := peer.Heads()
		v, err := peer.RootMap().Get("content")
		must(t, err)
		must(t, v.Text().Append(strings.Repeat("x", 2_000)))
		must(t, peer.RootMap().Set("bogus", int64(i)))
		_, err = peer.Commit("")
		must(t, err)
		chs, err := peer.Changes(heads...)
		must(t, err)
		merged.Store(0)
		p.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(automerge.SaveChanges(chs))})
		gone, _ = outcome(t, p)
		worst = max(worst, merged.Load())
	}
	if !gone {
		t.Error("the peer kept its document through 12 refused changes of 2,000 characters under a cap of 5,000")
	}
	if got := wideText(t, store); got != "one\n" {
		t.Fatalf("a refused change reached the store: %d characters", len(got))
	}
	// One merge: the held allowance and the message; the first message
	// reaches the store twice (the shared copy's merge, then the private
	// copy's).
	if worst > 2*most+2*changeWeight {
		t.Errorf("one message made the store apply %d operations, %.1f× the cap of %d", worst, float64(worst)/most, most)
	}
}

// Changes waiting for a dependency may be completed through another
// connection of the same credential: merged into the store there, the
// dependency reaches every other connection's private copy at its next
// catch-up, and each applies its waiting change then. So what the
// credential's connections keep waiting is counted across them, in its
// Budget: one message of one operation never sets off more than the cap
// (before, six connections each waiting 4,500 characters applied 5.4
// times the cap after it).
func TestSessionWaitingChangesCountedAcrossConnections(t *testing.T) {
	const most, conns, chars = 5_000, 6, 2_000
	store := openStore(t)
	docID, saved := wideBlock(t, store)
	budget := syncrepo.NewBudget(0, 0, 0)
	opts := &syncrepo.Options{MaxMessageOps: most, Budget: budget}
	join := func(p *pipe) {
		p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
		p.recv(t)
	}
	// A: one character; B_i: chars characters each, on A.
	peer, err := automerge.Load(saved)
	must(t, err)
	heads := peer.Heads()
	v, err := peer.RootMap().Get("content")
	must(t, err)
	must(t, v.Text().Append("a"))
	_, err = peer.Commit("")
	must(t, err)
	chs, err := peer.Changes(heads...)
	must(t, err)
	a := automerge.SaveChanges(chs)
	var bs [][]byte
	for i := range conns {
		fork, err := peer.Fork()
		must(t, err)
		h := fork.Heads()
		v, err := fork.RootMap().Get("content")
		must(t, err)
		must(t, v.Text().Append(strings.Repeat(string(rune('b'+i)), chars)))
		_, err = fork.Commit("")
		must(t, err)
		chs, err := fork.Changes(h...)
		must(t, err)
		bs = append(bs, automerge.SaveChanges(chs))
	}
	// Each connection sends its B_i, waiting for A; past what the
	// credential may keep waiting, a connection loses the document.
	var waiting, lost int
	for i := range conns {
		p, _ := serve(t, store, opts)
		join(p)
		p.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(bs[i])})
		if gone, _ := outcome(t, p); gone {
			lost++
		} else {
			waiting++
		}
	}
	if lost == 0 {
		t.Errorf("%d connections each kept %d characters waiting under a cap of %d", conns, chars, most)
	}
	if ops := int64(1 + waiting*chars); ops > most {
		t.Errorf("%d connections kept %d operations waiting, which one message of one operation would set off; the cap is %d", waiting, ops, most)
	}
	// A, on one more connection, still lands.
	p0, _ := serve(t, store, opts)
	join(p0)
	p0.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(a)})
	if gone, why := outcome(t, p0); gone {
		t.Fatalf("the change the others wait for was refused: %s", why)
	}
}

// A change costs the server about as much as a dozen one-character
// operations on its own, so each counts 16 toward the cap beside its
// operations: a message of many one-character changes is refused where
// its operations alone would fit (before, 30,000 of them in one 3.9 MB
// frame were counted 60,000 of 100,000 and cost 3.5 s of CPU, where one
// change at the cap cost 0.9 s).
func TestSessionWeighsEachChange(t *testing.T) {
	const most = 5_000
	for _, tc := range []struct {
		commits int
		refused bool
	}{{commits: 250, refused: false}, {commits: 400, refused: true}} {
		t.Run(fmt.Sprint(tc.commits, " one-character changes"), func(t *testing.T) {
			store := openStore(t)
			docID, saved := wideBlock(t, store)
			changes := peerEdits(t, saved, tc.commits, func(r *automerge.Map, _ int) error {
				v, err := r.Get("content")
				if err != nil {
					return err
				}
				return v.Text().Append("y")
			})
			p, _ := serve(t, store, &syncrepo.Options{MaxMessageOps: most})
			p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
			p.recv(t)
			p.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(changes...)})
			gone, why := outcome(t, p)
			if gone != tc.refused {
				t.Fatalf("%d changes of one character (%d operations) under a cap of %d: refused %v (%s), want %v", tc.commits, tc.commits, most, gone, why, tc.refused)
			}
			want := "one\n"
			if !tc.refused {
				want += strings.Repeat("y", tc.commits)
			}
			if got := wideText(t, store); got != want {
				t.Errorf("the block holds %d characters, want %d", len(got), len(want))
			}
		})
	}
}

// changeWeight is what the session counts a change for beside its
// operations.
const changeWeight = 16

// A change kept waiting on one connection, completed by its dependency
// merged through another connection of the credential, applies in the
// first connection's private copy at its catch-up but reaches the store
// only with that connection's next message: it counts toward that
// message, so one merge never hands the store the completed change and a
// full message besides (before, 8,532 operations under a cap of 5,000).
func TestSessionCaughtUpWaitingChangeCountsTowardTheNextMessage(t *testing.T) {
	const most = 5_000
	store := openStore(t)
	docID, saved := wideBlock(t, store)
	var mu sync.Mutex
	var worst int64
	merge := func(ctx context.Context, b *memory.Block, data []byte) error {
		if c, err := amchunk.Measure(data, amchunk.Limits{}); err == nil {
			mu.Lock()
			worst = max(worst, c.Ops+c.Refs+changeWeight*c.Changes)
			mu.Unlock()
		}
		return b.Merge(ctx, data)
	}
	opts := &syncrepo.Options{MaxMessageOps: most, Budget: syncrepo.NewBudget(0, 0, 0)}
	join := func(p *pipe) {
		p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
		p.recv(t)
	}
	// a, then b (4,000 characters) on a, then c (4,500) on b.
	chs := appendEdits(t, saved, "a", strings.Repeat("b", 4_000), strings.Repeat("c", 4_500))
	p1, _ := serve(t, store, opts, syncrepo.Hooks{Merge: merge})
	join(p1)
	p1.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(chs[1])})
	if gone, why := outcome(t, p1); gone {
		t.Fatalf("b, waiting for a, was refused: %s", why)
	}
	p0, _ := serve(t, store, opts, syncrepo.Hooks{Merge: merge})
	join(p0)
	p0.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(chs[0])})
	if gone, why := outcome(t, p0); gone {
		t.Fatalf("a was refused: %s", why)
	}
	// p1's poll catches its private copy up with a: b applies there.
	deadline := time.After(5 * time.Second)
wait:
	for {
		select {
		case b := <-p1.out:
			if m, err := syncrepo.DecodeMessage(b); err == nil && m.Type == syncrepo.TypeSync {
				break wait
			}
		case <-deadline:
			t.Fatal("p1 never caught up with a")
		}
	}
	p1.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(chs[2])})
	gone, _ := outcome(t, p1)
	mu.Lock()
	defer mu.Unlock()
	if !gone && worst > most {
		t.Errorf("one merge handed the store %d operations (%.1f× the cap of %d)", worst, float64(worst)/most, most)
	}
}

// syncRounds runs the automerge sync protocol, as a peer with ss, until
// the session falls quiet, and reports whether it made the document
// unavailable.
func syncRounds(t *testing.T, p *pipe, docID string, ss *automerge.SyncState) (unavailable bool) {
	t.Helper()
	sendOne := func() {
		if m, ok := ss.GenerateMessage(); ok {
			p.send(t, syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: m.Bytes()})
		}
	}
	sendOne()
	for {
		select {
		case b := <-p.out:
			m, err := syncrepo.DecodeMessage(b)
			must(t, err)
			switch m.Type {
			case syncrepo.TypeDocUnavailable:
				unavailable = true
			case syncrepo.TypeSync:
				_, err := ss.ReceiveMessage(m.Data)
				must(t, err)
				sendOne()
			}
		case <-time.After(time.Second):
			return unavailable
		}
	}
}

// An honest peer makes one edit the block refuses (an append past its
// limit), gets the counter-change, and goes on editing: its next small
// edit lands. The refused change and its counter-change (which deletes
// what the change inserted) are held and go to the store with that
// edit, about three times the refused edit's operations, within the
// held changes' allowance.
func TestSessionPeerKeepsEditingAfterARefusedEdit(t *testing.T) {
	const most = 5_000
	store := openStore(t)
	ctx := context.Background()
	blk, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "small", Value: "one\n", CharLimit: 1_500})
	must(t, err)
	d, err := blk.Doc(ctx)
	must(t, err)
	saved, err := d.Save()
	must(t, err)
	id, err := store.Agent("ada").Block("small").DocumentID(ctx)
	must(t, err)
	docID := syncrepo.EncodeDocumentID(id)

	p, _ := serve(t, store, &syncrepo.Options{MaxMessageOps: most})
	p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
	p.recv(t)
	peer, err := automerge.Load(saved)
	must(t, err)
	ss := automerge.NewSyncState(peer)
	if syncRounds(t, p, docID, ss) {
		t.Fatal("unavailable at the first sync")
	}
	appendText := func(s string) {
		v, err := peer.RootMap().Get("content")
		must(t, err)
		must(t, v.Text().Append(s))
		_, err = peer.Commit("")
		must(t, err)
	}
	appendText(strings.Repeat("x", 1_700)) // past the block's limit: refused
	if syncRounds(t, p, docID, ss) {
		t.Fatal("the peer lost the document right after one refused edit of 1,700 characters (cap 5,000)")
	}
	v, err := peer.RootMap().Get("content")
	must(t, err)
	if s, _ := v.Text().Get(); s != "one\n" {
		t.Fatalf("the counter-change did not reach the peer: %d characters", len(s))
	}
	appendText("y")
	if syncRounds(t, p, docID, ss) {
		t.Error("after one refused edit of 1,700 characters, the peer's next one-character edit lost it the document (cap 5,000)")
	}
	if got, _ := store.Agent("ada").Block("small").Render(ctx); !strings.Contains(got, "one\ny") {
		t.Errorf("the store reads %q", got)
	}
}
