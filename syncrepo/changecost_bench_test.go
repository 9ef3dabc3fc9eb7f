package syncrepo_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/fxamacker/cbor/v2"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

func openStoreB(b *testing.B) *memory.Store {
	c, err := memory.Open(context.Background(), filepath.Join(b.TempDir(), "s.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// notesBlockB creates ada's block "notes" reading "one\n" of character
// limit limit (0: the default) and returns its
// document id and saved document.
func notesBlockB(b *testing.B, store *memory.Store, limit int) (string, []byte) {
	ctx := context.Background()
	blk, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one\n", CharLimit: limit})
	if err != nil {
		b.Fatal(err)
	}
	doc, err := blk.Doc(ctx)
	if err != nil {
		b.Fatal(err)
	}
	saved, err := doc.Save()
	if err != nil {
		b.Fatal(err)
	}
	id, err := store.Agent("ada").Block("notes").DocumentID(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return syncrepo.EncodeDocumentID(id), saved
}

// appendSizes are the blocks the append benchmarks write to: one of the
// default limit kept between half and full (reset to "one\n" every 20
// appends of 100 characters), and one of the largest limit that grows by
// 1,000 characters per append.
var appendSizes = []struct {
	name  string
	limit int
	text  string
	reset int
}{
	{"limit=5000/append=100", 0, strings.Repeat("y", 99) + "\n", 20},
	{"limit=1M/append=1000", 1 << 20, strings.Repeat("y", 999) + "\n", 0},
}

// BenchmarkSyncAcceptedAppend: a peer's append over a session, from the
// frame in to the server's answer out (measured, decoded, merged and
// judged, persisted, indexed, the shared copy caught up), beside
// BenchmarkGoAPIAppend, the same append through the Go API.
func BenchmarkSyncAcceptedAppend(b *testing.B) {
	for _, size := range appendSizes {
		b.Run(size.name, func(b *testing.B) {
			ctx := context.Background()
			store := openStoreB(b)
			docID, saved := notesBlockB(b, store, size.limit)
			p := newPipe()
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			go syncrepo.Serve(sctx, p, store.Agent("ada"), &syncrepo.Options{Poll: time.Hour}) // answers only
			send := func(m syncrepo.Message) {
				bs, err := syncrepo.EncodeMessage(m)
				if err != nil {
					b.Fatal(err)
				}
				p.in <- bs
			}
			recv := func() syncrepo.Message {
				m, err := syncrepo.DecodeMessage(<-p.out)
				if err != nil {
					b.Fatal(err)
				}
				return m
			}
			send(syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
			recv()
			peer, err := automerge.Load(saved)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				if size.reset > 0 && i > 0 && i%size.reset == 0 {
					if err := store.Agent("ada").Block("notes").SetText(ctx, "one\n"); err != nil {
						b.Fatal(err)
					}
					doc, _ := store.Agent("ada").Block("notes").Doc(ctx)
					s, _ := doc.Save()
					if peer, err = automerge.Load(s); err != nil {
						b.Fatal(err)
					}
				}
				heads := peer.Heads()
				v, _ := peer.Path("content").Get()
				if err := v.Text().Append(size.text); err != nil {
					b.Fatal(err)
				}
				if _, err := peer.Commit(""); err != nil {
					b.Fatal(err)
				}
				chs, _ := peer.Changes(heads...)
				raw := automerge.SaveChanges(chs)
				b.StartTimer()
				send(syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: docID, Data: rawSync(raw)})
				if m := recv(); m.Type != syncrepo.TypeSync {
					var r syncrepo.Refusal
					cbor.Unmarshal(m.Data, &r)
					b.Fatalf("answer %s %+v at %d", m.Type, r, i)
				}
			}
		})
	}
}

// BenchmarkGoAPIAppend is BenchmarkSyncAcceptedAppend's appends through
// the Go API.
func BenchmarkGoAPIAppend(b *testing.B) {
	for _, size := range appendSizes {
		b.Run(size.name, func(b *testing.B) {
			ctx := context.Background()
			store := openStoreB(b)
			notesBlockB(b, store, size.limit)
			for i := range b.N {
				if size.reset > 0 && i > 0 && i%size.reset == 0 {
					b.StopTimer()
					if err := store.Agent("ada").Block("notes").SetText(ctx, "one\n"); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if err := store.Agent("ada").Block("notes").Append(ctx, size.text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
