package main

import (
	"testing"
	"time"

	"github.com/engram-go/engram/syncrepo"
)

// A sync message's Bloom filters are the peer's: automerge (Rust, built
// with panic=abort) divides by the filter's size in bits and allocates and
// computes one probe per num_probes for every change it considers sending,
// so a filter of entries but no bits aborts the whole process, and one of
// many probes (or many filters) costs CPU and memory the message's bytes do
// not bound. Any token may send one, a read-only token too.
func TestSyncBloomFilterOfNoBitsKeepsServeAlive(t *testing.T) {
	s := startAbuseServe(t, 0, 0, "hello\n")
	p := dialRaw(t, s.ws+s.ro)
	msg := syncMessage(nil, 0, [][]byte{bloom(1, 0, 1, 0)}, nil)
	if err := p.send(syncrepo.Message{Type: syncrepo.TypeRequest, DocumentID: s.docID, Data: msg}); err != nil {
		t.Fatal(err)
	}
	p.read(3 * time.Second)
	time.Sleep(500 * time.Millisecond)
	if !procAlive(s.pid) {
		t.Fatalf("engram serve exited on a %d-byte sync message from a read-only token (a Bloom filter of 1 entry, 0 bits per entry)", len(msg))
	}
	q := newGoPeer(t, s.ws+s.rw, s.url)
	if !q.until(func(p *goPeer) bool { return p.text() == "hello\n" }) {
		t.Fatal("another peer does not sync after the message")
	}
}

func TestSyncBloomFilterCost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edits int
		haves [][]byte
	}{
		// One filter whose every probe hits: 10^8 probes per change.
		{"many probes", 0, [][]byte{bloom(1, 8, 100_000_000, 0xff)}},
		// 200,000 filters of 1,000 probes each (1.4 MB), every one
		// computed in full for each of the document's changes.
		{"many filters", 8, func() [][]byte {
			hs := make([][]byte, 200_000)
			for i := range hs {
				hs[i] = bloom(1, 8, 1000, 0)
			}
			return hs
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startAbuseServe(t, 0, tc.edits, "hello\n")
			p := dialRaw(t, s.ws+s.ro)
			msg := syncMessage(nil, 0, tc.haves, nil)
			cpu, hwm := cost(t, s.pid, func() {
				if err := p.send(syncrepo.Message{Type: syncrepo.TypeRequest, DocumentID: s.docID, Data: msg}); err != nil {
					t.Fatal(err)
				}
				if _, err := p.read(120 * time.Second); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("%d-byte message: %v CPU, peak RSS +%d MiB", len(msg), cpu, hwm>>20)
			if cpu > 2*time.Second || hwm > 256<<20 {
				t.Errorf("one %d-byte sync message of a read-only token cost %v of CPU and %d MiB of peak RSS (at most 2 s, 256 MiB)", len(msg), cpu, hwm>>20)
			}
		})
	}
}
