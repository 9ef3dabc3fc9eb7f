// Package mcpguard is the receiving middleware engram's MCP servers put
// in front of the go-sdk, so that no request's strings can make a reply
// that is not JSON: the SDK writes a resource's URI into its
// resource-not-found error data with Go's %q quoting, which is not JSON
// for a control character, DEL, a non-printable rune beyond U+FFFF or
// invalid UTF-8. Such a reply cannot be encoded, and the SDK then ends
// the session (engram mcp on stdio exits; over HTTP the session answers
// every later request with an empty stream).
package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Middleware answers resources/read, resources/subscribe and
// resources/unsubscribe with JSON-RPC -32602 when the URI is not
// printable text (see CheckURI), before the SDK or a handler sees it. As
// a backstop for any other error that carries data which is not JSON, it
// drops that data, keeping the error's code and message.
func Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var uri string
		switch p := req.GetParams().(type) {
		case *mcp.ReadResourceParams:
			uri = p.URI
		case *mcp.SubscribeParams:
			uri = p.URI
		case *mcp.UnsubscribeParams:
			uri = p.URI
		}
		if err := CheckURI(uri); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + err.Error()}
		}
		res, err := next(ctx, method, req)
		var we *jsonrpc.Error
		if errors.As(err, &we) && len(we.Data) > 0 && !json.Valid(we.Data) {
			err = &jsonrpc.Error{Code: we.Code, Message: we.Message}
		}
		return res, err
	}
}

// CheckURI reports, without echoing it, what makes uri other than
// printable text: invalid UTF-8, or a control or other non-printable
// character (strconv.IsPrint). nil when there is none.
func CheckURI(uri string) error {
	for i, r := range uri {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(uri[i:]); size == 1 {
				return fmt.Errorf("the resource URI has invalid UTF-8 (byte 0x%02x) at byte %d; a URI is printable text, without control characters", uri[i], i)
			}
		}
		if !strconv.IsPrint(r) {
			return fmt.Errorf("the resource URI has a control character or other non-printable character (%U) at byte %d; a URI is printable text", r, i)
		}
	}
	return nil
}
