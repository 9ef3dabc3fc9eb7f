package main

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/syncrepo"
)

// A peer that made many small edits offline sends them in one sync
// message. Each edit is one change of one operation: the message is small
// and measures far under the block's limits, but automerge-go's Doc.Apply
// of n changes read together copies, for every change, the whole result it
// was read with (AMresultCat), so the server spends memory growing with n³
// (500 changes: ~0.7 GB; 1,000: 4.4 GB; 2,000: killed). An ordinary
// automerge-repo client that was offline does this, no malice needed.
func TestSyncManySmallChangesCost(t *testing.T) {
	const n = 500
	s := startAbuseServe(t, 0, 0, "hello\n")
	p := newGoPeer(t, s.ws+s.rw, s.url)
	if !p.until(func(p *goPeer) bool { return p.text() == "hello\n" }) {
		t.Fatal("no sync")
	}
	p.mu.Lock()
	text := p.doc.Path("content").Text()
	for range n {
		if err := text.Append("x"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.doc.Commit("offline"); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Unlock()
	cpu, hwm := cost(t, s.pid, func() {
		p.edit("!") // sends everything the server lacks
		want := "hello\n" + strings.Repeat("x", n) + "!"
		deadline := time.Now().Add(120 * time.Second)
		for time.Now().Before(deadline) {
			doc := openServeStoreAt(t, s.store)
			b, err := doc.Agent("ada").Block("notes").Doc(t.Context())
			if err == nil {
				if got, _ := b.Text(); got == want {
					doc.Close()
					return
				}
			}
			if false {
				doc.Close()
				return
			}
			doc.Close()
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatal("the peer's edits did not reach the store")
	})
	t.Logf("%d one-character changes in one sync message: %v CPU, peak RSS +%d MiB", n+1, cpu, hwm>>20)
	if cpu > 2*time.Second || hwm > 256<<20 {
		t.Errorf("%d one-character changes (a peer's offline edits) cost the server %v of CPU and %d MiB of peak RSS (at most 2 s, 256 MiB)", n+1, cpu, hwm>>20)
	}
}

// The heads a peer names in a sync message are looked up one by one and
// then passed together to Doc.Changes, which (automerge-go's createItems)
// concatenates them pairwise: memory and time grow with the square of
// their number. A read-only token names one real head 16,000 times (512 KB).
func TestSyncRepeatedHeadsCost(t *testing.T) {
	s := startAbuseServe(t, 0, 0, "hello\n")
	h, err := hex.DecodeString(s.heads[0])
	if err != nil {
		t.Fatal(err)
	}
	heads := make([][]byte, 16_000)
	for i := range heads {
		heads[i] = h
	}
	msg := syncMessage(heads, 0, nil, nil)
	p := dialRaw(t, s.ws+s.ro)
	cpu, hwm := cost(t, s.pid, func() {
		if err := p.send(syncrepo.Message{Type: syncrepo.TypeRequest, DocumentID: s.docID, Data: msg}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.read(120 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%d-byte message naming one head %d times: %v CPU, peak RSS +%d MiB", len(msg), len(heads), cpu, hwm>>20)
	if cpu > 2*time.Second || hwm > 256<<20 {
		t.Errorf("one %d-byte sync message of a read-only token cost %v of CPU and %d MiB of peak RSS (at most 2 s, 256 MiB)", len(msg), cpu, hwm>>20)
	}
}
