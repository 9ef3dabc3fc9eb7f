package syncrepo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
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
