package tools

import (
	"context"

	"github.com/engram-go/engram/memory"
)

// InterceptEdits makes ts write edits through apply and propose instead
// of the block handle's Apply and Propose, so a test can run another
// writer between a tool's read of a block and its edit.
func InterceptEdits(ts *Toolset,
	apply func(ctx context.Context, b *memory.Block, e memory.Edit) error,
	propose func(ctx context.Context, b *memory.Block, e memory.Edit, reason string) (memory.Proposal, error)) {
	if apply != nil {
		ts.apply = apply
	}
	if propose != nil {
		ts.propose = propose
	}
}
