package syncrepo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// checkedThen runs then, once armed, right after a read-access check of
// the block passed: what lands between a session's check and its reply.
type checkedThen struct {
	mu   sync.Mutex
	then func()
}

func (c *checkedThen) doc(ctx context.Context, b *memory.Block) (*blocks.Document, error) {
	doc, err := b.Doc(ctx)
	c.mu.Lock()
	then := c.then
	c.then = nil
	c.mu.Unlock()
	if err == nil && then != nil {
		then()
	}
	return doc, err
}

// The shared copy a sharee's session replies from may take the owner's
// edits made after an unshare at any time (another session catches it
// up): a reply goes out only if the agent may still read the block once
// the reply is made, so an unshare landing just after the session's
// check leaks nothing.
func TestSessionUnshareBetweenCheckAndReply(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	docID, saved := notesBlock(t, store, "bob")
	must(t, store.Agent("bob").Block("notes").Share(ctx, "ada", blocks.ReadOnly))
	mirrors := syncrepo.NewMirrors()
	race := &checkedThen{}
	reader := newPipePeerAs(t, store, "ada", &syncrepo.Options{Poll: time.Hour, Mirrors: mirrors}, docID, saved, syncrepo.Hooks{Doc: race.doc})
	newPipePeerAs(t, store, "bob", &syncrepo.Options{Poll: 10 * time.Millisecond, Mirrors: mirrors}, docID, saved)
	if !reader.waitText("one\n") {
		t.Fatalf("first sync: %q", reader.text())
	}
	time.Sleep(100 * time.Millisecond) // the first sync's exchange is over
	race.mu.Lock()
	race.then = func() {
		must(t, store.Agent("bob").Block("notes").Unshare(ctx, "ada"))
		must(t, store.Agent("bob").Block("notes").Append(ctx, "secret\n"))
		time.Sleep(200 * time.Millisecond) // bob's session catches the shared copy up
	}
	race.mu.Unlock()
	reader.mu.Lock()
	reader.ss = automerge.NewSyncState(reader.doc) // a reconnecting peer's first message
	reader.sendSync(syncrepo.TypeSync)
	reader.mu.Unlock()
	time.Sleep(500 * time.Millisecond)
	if got := reader.text(); got != "one\n" {
		t.Fatalf("a peer whose agent lost read access between the check and the reply got %q", got)
	}
}
