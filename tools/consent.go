package tools

import (
	"context"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/toolrules"
)

// ConsentApprover lets a toolrules.Engine ask the same blocks.Approver that
// decides Partner/Human memory writes (memory.Options.Approver), as DESIGN.md
// asks of RequiresConsent. The Approver sees an ApprovalRequest with Op
// blocks.OpToolCall, the agent, the tool's name in Field and the raw JSON
// arguments as the only Arg. A nil Approver denies, like the store's.
func ConsentApprover(a blocks.Approver) toolrules.Approver {
	return toolrules.ApproverFunc(func(_ context.Context, req toolrules.ConsentRequest) (bool, error) {
		if a == nil {
			return false, nil
		}
		return a.Approve(blocks.ApprovalRequest{Agent: req.Agent, Op: blocks.OpToolCall, Field: req.Tool, Args: []any{string(req.Arguments)}})
	})
}
