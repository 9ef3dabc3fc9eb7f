package main

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRecoverHandlers: a panicking method handler becomes an error for
// that call, not a crash of the process.
func TestRecoverHandlers(t *testing.T) {
	h := recoverHandlers(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		panic("a handler's bug")
	})
	res, err := h(context.Background(), "tools/call", nil)
	if res != nil || err == nil || !strings.Contains(err.Error(), "internal error in tools/call") {
		t.Fatalf("got %v, %v; want an internal error naming the method", res, err)
	}
	ok := recoverHandlers(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.CallToolResult{}, nil
	})
	if res, err := ok(context.Background(), "tools/call", nil); err != nil || res == nil {
		t.Fatalf("a handler that does not panic: %v, %v", res, err)
	}
}
