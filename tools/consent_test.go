package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/toolrules"
	"github.com/engram-go/engram/tools"
)

func TestConsentApproverUsesTheMemoryApprover(t *testing.T) {
	var seen []blocks.ApprovalRequest
	approver := blocks.ApproverFunc(func(r blocks.ApprovalRequest) (bool, error) {
		seen = append(seen, r)
		return r.Field == "archival_insert", nil
	})
	eng, err := toolrules.NewEngine([]toolrules.Rule{toolrules.RequiresConsent("archival_insert"), toolrules.RequiresConsent("web")},
		&toolrules.EngineOptions{Approver: tools.ConsentApprover(approver)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := eng.Call(ctx, toolrules.Call{Agent: "a", Tool: "archival_insert", Arguments: json.RawMessage(`{"content":"x"}`)}); err != nil {
		t.Fatalf("approved call refused: %v", err)
	}
	if err := eng.Call(ctx, toolrules.Call{Agent: "a", Tool: "web"}); !errors.Is(err, toolrules.ErrViolation) {
		t.Fatalf("denied call: %v", err)
	}
	if len(seen) != 2 || seen[0].Op != blocks.OpToolCall || seen[0].Agent != "a" || seen[0].Args[0] != `{"content":"x"}` {
		t.Fatalf("approval requests = %+v", seen)
	}
	nilEng, _ := toolrules.NewEngine([]toolrules.Rule{toolrules.RequiresConsent("web")}, &toolrules.EngineOptions{Approver: tools.ConsentApprover(nil)})
	if err := nilEng.Call(ctx, toolrules.Call{Tool: "web"}); !errors.Is(err, toolrules.ErrViolation) {
		t.Fatalf("nil approver should deny: %v", err)
	}
}
