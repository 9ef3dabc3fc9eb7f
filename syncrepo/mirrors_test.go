package syncrepo_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// joinRaw starts agent's session on store with a raw pipe, joins, and
// sends a request for docID.
func joinRaw(t *testing.T, store *memory.Store, agent string, opts *syncrepo.Options, docID string, h ...syncrepo.Hooks) *pipe {
	t.Helper()
	p := newPipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go serveAs(ctx, p, store, agent, opts, h...)
	p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: agent, SupportedProtocolVersions: []string{"1"}})
	p.recv(t)
	request(t, p, docID)
	return p
}

// makingCopy reports whether the caller runs inside a session's copy of
// a document (a Hooks.Doc call from storeDoc, under Mirrors.acquire).
func makingCopy() bool {
	buf := make([]byte, 8<<10)
	return strings.Contains(string(buf[:runtime.Stack(buf, false)]), "storeDoc")
}

// One session's failed copy of a document (its agent lost read access
// while the copy was being made) is that session's failure only: the
// owner's own peer, waiting for that copy, makes the copy itself and
// syncs.
func TestFailedCopyIsNotAnotherAgentsFailure(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	docID, _ := notesBlock(t, store, "bob")
	must(t, store.Agent("bob").Block("notes").Share(ctx, "ada", blocks.ReadOnly))
	mirrors := syncrepo.NewMirrors()
	loading, proceed := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	hook := func(ctx context.Context, b *memory.Block) (*blocks.Document, error) {
		// ada's first copy of the document.
		if makingCopy() && calls.Add(1) == 1 {
			close(loading)
			<-proceed
			// bob unshares while ada's copy is being made.
			must(t, store.Agent("bob").Block("notes").Unshare(context.Background(), "ada"))
		}
		return b.Doc(ctx)
	}
	ada := joinRaw(t, store, "ada", &syncrepo.Options{Mirrors: mirrors, Poll: time.Hour}, docID, syncrepo.Hooks{Doc: hook})
	<-loading
	bob := joinRaw(t, store, "bob", &syncrepo.Options{Mirrors: mirrors, Poll: time.Hour}, docID)
	time.Sleep(300 * time.Millisecond) // bob's session waits for ada's copy
	close(proceed)
	if m := ada.recv(t); m.Type != syncrepo.TypeDocUnavailable {
		t.Logf("ada (unshared): %s", m.Type)
	}
	if m := bob.recv(t); m.Type != syncrepo.TypeSync {
		t.Fatalf("the owner's peer, joining its own block while a sharee's copy failed: %s (%s), want sync", m.Type, m.Message)
	}
}

// The same with the loading session's context ending (in engram serve:
// its token expired or was revoked) while its copy is made: another
// connection waiting for that copy makes it itself and syncs.
func TestCancelledCopyIsNotAnotherSessionsFailure(t *testing.T) {
	store := openStore(t)
	docID, _ := notesBlock(t, store, "ada")
	mirrors := syncrepo.NewMirrors()
	loading, proceed := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	first := newPipe()
	firstCtx, cancelFirst := context.WithCancel(context.Background())
	t.Cleanup(cancelFirst)
	hook := func(ctx context.Context, b *memory.Block) (*blocks.Document, error) {
		if makingCopy() && calls.Add(1) == 1 {
			close(loading)
			<-proceed
			cancelFirst() // the first connection's token expires
		}
		return b.Doc(ctx)
	}
	go serveAs(firstCtx, first, store, "ada", &syncrepo.Options{Mirrors: mirrors, Poll: time.Hour}, syncrepo.Hooks{Doc: hook})
	first.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "first", SupportedProtocolVersions: []string{"1"}})
	first.recv(t)
	request(t, first, docID)
	<-loading
	second := joinRaw(t, store, "ada", &syncrepo.Options{Mirrors: mirrors, Poll: time.Hour}, docID)
	time.Sleep(300 * time.Millisecond)
	close(proceed)
	if m := second.recv(t); m.Type != syncrepo.TypeSync {
		t.Fatalf("a second connection, joining while the first's copy was cancelled: %s, want sync", m.Type)
	}
}

// A copy whose load panics (net/http recovers a handler's panic, so
// engram serve goes on) leaves nothing behind: a later join of the
// document makes the copy again and syncs, rather than waiting for ever
// for a copy being made.
func TestPanickedCopyLeavesNothingBehind(t *testing.T) {
	store := openStore(t)
	docID, _ := notesBlock(t, store, "ada")
	mirrors := syncrepo.NewMirrors()
	var calls atomic.Int32
	hook := func(ctx context.Context, b *memory.Block) (*blocks.Document, error) {
		if makingCopy() && calls.Add(1) == 1 {
			panic("boom")
		}
		return b.Doc(ctx)
	}
	first := newPipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		serveAs(ctx, first, store, "ada", &syncrepo.Options{Mirrors: mirrors, Poll: time.Hour}, syncrepo.Hooks{Doc: hook})
	}()
	first.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "first", SupportedProtocolVersions: []string{"1"}})
	first.recv(t)
	request(t, first, docID)
	if r := <-recovered; r == nil {
		t.Fatal("no panic")
	}
	second := joinRaw(t, store, "ada", &syncrepo.Options{Mirrors: mirrors, Poll: time.Hour}, docID)
	if m := second.recv(t); m.Type != syncrepo.TypeSync {
		t.Fatalf("a join after a panicked load: %s, want sync", m.Type)
	}
}
