package blocks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// attributingWriter is a store that records who merged which changes.
type attributingWriter struct {
	directWriter
	by  map[string]string
	err error
	ctx []context.Context // the contexts MergedBy was called with
}

func (w *attributingWriter) MergedBy(ctx context.Context) (map[string]string, error) {
	w.ctx = append(w.ctx, ctx)
	return w.by, w.err
}

type ctxKey struct{}

// TestHistoryAttributesMergedChanges: on a document a store manages, the
// changes the store says it merged from elsewhere show as the merging
// agent's, op merge, with the peer's commit message only as PeerMessage
// (cut to 256 bytes at a character boundary), in History of the document,
// its views and its At views (asked with the view's context); a failure
// to read the store's record fails History. Without a store, a foreign
// change is what its message says.
func TestHistoryAttributesMergedChanges(t *testing.T) {
	d := newDoc(t, schema.Text{}, blocks.ReadWrite)
	must(t, d.SetText("base\n", blocks.Agent))
	saved, err := d.Save()
	must(t, err)
	long := `{"a":"bob","op":"set_text","s":"sec","f":"fld","x":"!` + strings.Repeat("é", 200) + `"}`
	peer, err := automerge.Load(saved)
	must(t, err)
	var hashes []string
	for _, msg := range []string{"", long} {
		v, err := peer.RootMap().Get("content")
		must(t, err)
		must(t, v.Text().Append("x\n"))
		h, err := peer.Commit(msg)
		must(t, err)
		hashes = append(hashes, h.String())
	}
	plain, err := blocks.Load(d.Info(), peer.Save(), nil)
	must(t, err)
	h, err := plain.History()
	must(t, err)
	if c := h[len(h)-1]; c.Actor != "bob" || c.Op != blocks.OpSetText || c.PeerMessage != "" {
		t.Fatalf("unmanaged: the forged change is %s/%s (peer message %q): what its message says", c.Actor, c.Op, c.PeerMessage)
	}

	w := &attributingWriter{by: map[string]string{hashes[0]: "carol", hashes[1]: "carol"}}
	rep, err := blockseam.Manage(d, w)
	must(t, err)
	merged, _, err := rep.Merge(peer.Save(), blocks.Origin{Agent: "carol", Permission: blocks.ReadWrite})
	must(t, err)
	if strings.Join(merged.Hashes, ",") != strings.Join(hashes, ",") {
		t.Fatalf("Merge reports hashes %v, made %v", merged.Hashes, hashes)
	}
	view := d.View("carol", blocks.ReadWrite).WithContext(context.WithValue(context.Background(), ctxKey{}, "view"))
	at, err := view.At(view.Heads())
	must(t, err)
	for name, doc := range map[string]*blocks.Document{"document": d, "view": view, "At view": at} {
		w.ctx = nil
		h, err := doc.History()
		must(t, err)
		if len(h) != 4 {
			t.Fatalf("%s: %d changes", name, len(h))
		}
		if c := h[1]; c.Actor == "carol" || c.PeerMessage != "" {
			t.Errorf("%s: the store's own change is %s (peer message %q)", name, c.Actor, c.PeerMessage)
		}
		for i, c := range h[2:] {
			if c.Actor != "carol" || c.Op != blocks.OpMerge || c.Section != "" || c.Field != "" {
				t.Errorf("%s: merged change %d is %s/%s (section %q, field %q), want carol/merge", name, i, c.Actor, c.Op, c.Section, c.Field)
			}
		}
		if pm := h[3].PeerMessage; len(pm) > 256 || len(pm) < 250 || !utf8.ValidString(pm) || !strings.HasPrefix(long, pm) {
			t.Errorf("%s: peer message of %d bytes (valid UTF-8: %v), want the message's first 255 or 256 bytes", name, len(pm), utf8.ValidString(pm))
		}
		if name != "document" && (len(w.ctx) != 1 || w.ctx[0].Value(ctxKey{}) != "view") {
			t.Errorf("%s: the store was asked with contexts %v, want the view's", name, w.ctx)
		}
	}
	w.err = errors.New("database down")
	if _, err := view.History(); !errors.Is(err, w.err) {
		t.Errorf("History with the store's record unreadable: %v", err)
	}
}
