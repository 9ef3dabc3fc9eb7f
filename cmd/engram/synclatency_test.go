package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// syncLatencyP50 is how soon, at the median, a store change must reach a
// connected /sync peer: the store signals its changes, so no poll period
// stands between them (the race detector slows every step, both ends).
const syncLatencyP50 = 20 * time.Millisecond * syncLatencyScale

// A change reaches a connected /sync peer by the store's signal, not the
// next poll: a Go-API append on SQLite, an edit of another /sync peer, and
// on PostgreSQL an append through another store (another serve process's)
// whose notification wakes this one; 50 changes each, p50 ≤ 20 ms.
func TestSyncAppendLatency(t *testing.T) {
	ctx := context.Background()
	const n = 50
	for _, tc := range []struct {
		name string
		// open returns the store serve runs on and the one the Go writer
		// uses (the same, or another on the same database).
		open func(t *testing.T) (served, writer *memory.Store)
		// peerWrites: the change is another /sync peer's edit.
		peerWrites bool
	}{
		{"sqlite go api", func(t *testing.T) (*memory.Store, *memory.Store) { s := openServeStore(t); return s, s }, false},
		{"sqlite another peer", func(t *testing.T) (*memory.Store, *memory.Store) { s := openServeStore(t); return s, s }, true},
		{"postgres another store", func(t *testing.T) (*memory.Store, *memory.Store) {
			dsn := pgtest.Start(t).NewDatabase(t)
			return openServeStoreAt(t, dsn), openServeStoreAt(t, dsn)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served, writer := tc.open(t)
			if _, err := writer.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start\n", CharLimit: 100000}); err != nil {
				t.Fatal(err)
			}
			id, err := writer.Agent("ada").Block("notes").DocumentID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, secret := newToken(t, served, accesstoken.Spec{Agent: "ada"})
			f := startServe(t, served, nil)
			ws := "ws" + strings.TrimPrefix(f.url, "http") + "/sync?token=" + secret
			p := newGoPeer(t, ws, syncrepo.URL(id))
			var from *goPeer
			if tc.peerWrites {
				from = newGoPeer(t, ws, syncrepo.URL(id))
			}
			for _, q := range []*goPeer{p, from} {
				if q != nil && !q.until(func(p *goPeer) bool { return p.text() == "start\n" }) {
					t.Fatalf("first sync: %q", q.text())
				}
			}
			time.Sleep(200 * time.Millisecond) // the first sync's exchange is over
			var took []time.Duration
			for i := range n {
				line := fmt.Sprintf("line %d\n", i)
				start := time.Now()
				if from != nil {
					from.edit(line)
				} else if err := writer.Agent("ada").Block("notes").Append(ctx, line); err != nil {
					t.Fatal(err)
				}
				if !p.until(func(p *goPeer) bool { return strings.HasSuffix(p.text(), line) }) {
					t.Fatalf("change %d did not reach the peer: %q", i, p.text())
				}
				took = append(took, time.Since(start))
				// Changes land at random points of any poll period.
				time.Sleep(time.Duration(i%7) * 3 * time.Millisecond)
			}
			slices.Sort(took)
			p50, p95 := took[(n-1)*50/100], took[(n-1)*95/100]
			t.Logf("%s: change → peer over %d changes: p50 %v, p95 %v, max %v", tc.name, n, p50, p95, took[n-1])
			if p50 > syncLatencyP50 {
				t.Errorf("p50 %v, want ≤ %v", p50, syncLatencyP50)
			}
		})
	}
}
