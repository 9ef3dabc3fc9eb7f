package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// block show --history names, for changes merged from outside the store
// (MergeChanges, as /sync merges a peer's), the agent that merged them
// with op merge: not "unknown" for a plain automerge peer's change (no
// engram commit message), and not the agent a forged message names. The
// peer's message shows only as peer_message in --json.
func TestCLIHistoryShowsMergingAgent(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "h.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "notes", "--value", "start\n")
	ok(t, db, "share", "--owner", "ada", "--label", "notes", "--with", "bob", "--perm", "Append")
	store, err := memory.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := store.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	forged := `{"a":"ada","op":"append_text"}`
	for _, msg := range []string{"", forged} {
		v, err := peer.Path("content").Get()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Text().Append("peer\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Commit(msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Agent("bob").Shared("ada", "notes").Merge(ctx, peer.SaveIncremental()); err != nil {
		t.Fatal(err)
	}
	store.Close()

	out := ok(t, db, "block", "show", "--agent", "ada", "--history", "notes")
	rows := regexp.MustCompile(`(?m)^\S+\s+bob\s+merge\s+[0-9a-f]{12}\s+0$`).FindAllString(out, -1)
	if len(rows) != 2 || strings.Contains(out, "unknown") || regexp.MustCompile(`(?m)^\S+\s+ada\s`).MatchString(out) {
		t.Fatalf("block show --history: want the two merged changes as bob's merges, none as ada's or unknown:\n%s", out)
	}
	var js struct {
		History []blocks.Change `json:"history"`
	}
	if err := json.Unmarshal([]byte(ok(t, db, "--json", "block", "show", "--agent", "ada", "notes")), &js); err != nil {
		t.Fatal(err)
	}
	h := js.History
	if len(h) < 2 {
		t.Fatalf("--json history: %+v", h)
	}
	for i, want := range []string{"", forged} {
		if c := h[len(h)-2+i]; c.Actor != "bob" || c.Op != blocks.OpMerge || c.PeerMessage != want {
			t.Errorf("--json: merged change %d: %+v; want bob/merge with peer message %q", i, c, want)
		}
	}
}
