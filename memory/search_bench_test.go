package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// BenchmarkConversationSearch: one search of a LoCoMo conversation (its
// 19 to 32 sessions, about 600 turns) stored as messages, a batch a
// session, or as archival entries naming their session, with default
// options and limit 10, each iteration the next of its questions; the
// text cache answers. What ranking a conversation's
// turns together costs shows here.
func BenchmarkConversationSearch(b *testing.B) {
	path := eval.FindLoCoMo()
	if path == "" {
		testenv.Missing(b, "LoCoMo dev set not found")
		return
	}
	data, err := eval.LoadLoCoMo(path)
	if err != nil {
		b.Fatal(err)
	}
	conv := data.Conversations[0]
	ctx := context.Background()
	for _, kind := range []string{"messages", "archival"} {
		b.Run(kind, func(b *testing.B) {
			store, err := memory.Open(ctx, filepath.Join(b.TempDir(), "s.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			a := store.Agent(conv.ID)
			types := search.Messages
			for _, sess := range conv.Sessions {
				if len(sess.Turns) == 0 {
					continue
				}
				if kind == "messages" {
					msgs := make([]memory.Message, len(sess.Turns))
					for i, tr := range sess.Turns {
						msgs[i] = memory.Message{Role: memory.RoleUser, Content: tr.Text, BatchID: sess.Key, CreatedAt: sess.Time}
					}
					_, err = a.Messages().AppendMany(ctx, msgs)
				} else {
					types = search.Archival
					es := make([]memory.ArchivalEntry, len(sess.Turns))
					for i, tr := range sess.Turns {
						es[i] = memory.ArchivalEntry{Content: tr.Text, Metadata: map[string]any{"session": sess.Key}}
					}
					_, err = a.Archival().InsertBatch(ctx, es, nil)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			opts := search.NewOptions().ContentTypes(types).Limit(10)
			// The first search starts the text cache's load (SQL answers
			// until it is ready): every query twice before timing.
			for range 2 {
				for _, q := range conv.Questions {
					if _, err := a.Search(ctx, q.Question, opts); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := a.Search(ctx, conv.Questions[i%len(conv.Questions)].Question, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
