package blocks_test

import (
	"context"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
)

// recordingWriter keeps the requests a managed document sends it.
type recordingWriter struct{ reqs []blockseam.WriteRequest }

func (w *recordingWriter) Write(_ context.Context, req blockseam.WriteRequest, apply func(blocks.Permission) error) error {
	w.reqs = append(w.reqs, req)
	return apply(req.Permission)
}

// The decision a store gives Approved reaches its Writer with every write
// through that view (and views made from it), and with no other write: it
// is how the store commits an approval with the approved edit.
func TestApprovedDecisionReachesTheWriter(t *testing.T) {
	type token struct{ id int }
	tok := &token{7}
	for _, tc := range []struct {
		name string
		view func(d *blocks.Document) *blocks.Document
		want any
	}{
		{"plain view", func(d *blocks.Document) *blocks.Document { return d.View("agent-1", blocks.Partner) }, nil},
		{"approved, no decision", func(d *blocks.Document) *blocks.Document { return d.View("agent-1", blocks.Partner).Approved(nil) }, nil},
		{"approved with a decision", func(d *blocks.Document) *blocks.Document { return d.View("agent-1", blocks.Partner).Approved(tok) }, tok},
		{"with a context after", func(d *blocks.Document) *blocks.Document {
			return d.View("agent-1", blocks.Partner).Approved(tok).WithContext(context.Background())
		}, tok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := textDoc(t, blocks.Admin)
			d.SetApprover(blocks.ApproverFunc(func(blocks.ApprovalRequest) (bool, error) { return true, nil }))
			w := &recordingWriter{}
			if _, err := blockseam.Manage(d, w); err != nil {
				t.Fatal(err)
			}
			must(t, tc.view(d).AppendText(" more", blocks.Agent))
			if len(w.reqs) != 1 {
				t.Fatalf("writer got %d requests, want 1", len(w.reqs))
			}
			if got := w.reqs[0].Decision; got != tc.want {
				t.Fatalf("Decision = %v, want %v", got, tc.want)
			}
		})
	}
}
