package main

import (
	"context"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// One edit through either door of engram serve, an MCP tool's block edit
// or a /sync peer's message, is capped by Options.MaxEdit (--max-edit)
// even on a block whose own limit is far larger: past it, the edit is
// refused and the block keeps what it had; within it, the edit lands.
// Without MaxEdit the handler and the tools take the same default.
func TestServeCapsOneEdit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		maxEdit int
		most    int // the cap in force
	}{
		{"set", 300, 300},
		{"default", 0, serve.DefaultMaxEdit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openServeStore(t)
			if _, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "wide", Value: "start\n", CharLimit: blocks.MaxCharLimit}); err != nil {
				t.Fatal(err)
			}
			f := startServe(t, store, &serve.Options{MaxEdit: tc.maxEdit})
			_, secret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
			cs := mustConnect(t, f, secret)
			render := func() string {
				r, err := store.Agent("ada").Block("wide").Render(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}

			// MCP: one character past the cap is refused, the cap applies.
			// (Each half is judged on its own: a failure here leaves the
			// /sync half to run.)
			if out, isErr := callTool(t, cs, "block_append", map[string]any{"label": "wide", "text": strings.Repeat("m", tc.most+1)}); !isErr || !strings.Contains(out, "smaller edits") {
				t.Errorf("an append of %d characters: %v %q", tc.most+1, isErr, out)
			}
			if r := render(); r != "start\n" {
				t.Errorf("after the refused append the block holds %d characters", len(r))
			}
			if out, isErr := callTool(t, cs, "block_append", map[string]any{"label": "wide", "text": strings.Repeat("m", tc.most)}); isErr {
				t.Errorf("an append of %d characters: %q", tc.most, out)
			}
			want := render()

			// /sync: a change past the cap is refused unapplied, and the
			// document becomes unavailable to the peer.
			id, err := store.Agent("ada").Block("wide").DocumentID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ws := "ws" + strings.TrimPrefix(f.url, "http") + "/sync?token=" + secret
			p := newGoPeer(t, ws, syncrepo.URL(id))
			if !p.until(func(p *goPeer) bool { return p.text() == want }) {
				t.Fatalf("the peer's first sync: %d characters", len(p.text()))
			}
			p.edit(strings.Repeat("s", tc.most+1))
			if !p.until(func(p *goPeer) bool { return p.state == "unavailable" }) {
				t.Errorf("after a change of %d characters the peer's document is %q", tc.most+1, p.state)
			}
			if r := render(); r != want {
				t.Errorf("the refused change reached the store: %d characters, want %d", len(r), len(want))
			}

			// Within the cap, a new peer's change lands.
			q := newGoPeer(t, ws, syncrepo.URL(id))
			if !q.until(func(p *goPeer) bool { return p.text() == want }) {
				t.Fatalf("the second peer's first sync: %d characters", len(q.text()))
			}
			q.edit(strings.Repeat("s", tc.most/2))
			if !q.until(func(*goPeer) bool { return len(render()) == len(want)+tc.most/2 }) {
				t.Errorf("a change of %d characters did not land: the block holds %d, want %d", tc.most/2, len(render()), len(want)+tc.most/2)
			}
		})
	}
}
