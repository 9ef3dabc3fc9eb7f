package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// firstWithoutBatches is the first MCP protocol version without JSON-RPC
// batches.
const firstWithoutBatches = "2025-06-18"

// defaultMaxBatch is Options.MaxBatch's default.
const defaultMaxBatch = 32

// isBatch reports whether a POST body is a JSON-RPC batch: a JSON array.
func isBatch(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

// admitBatch lets a JSON-RPC batch go on to the SDK only where the
// protocol has batches, at most MaxBatch long, with every message paid
// for by the token's rate bucket (the request itself was, by allow). It
// answers otherwise, before anything in the batch runs, and reports
// whether the batch may go on, and how many calls (requests, which run
// side by side) it holds: 1 when that is not known, and never more than
// TokenConcurrency, since a batch of more is refused. The SDK itself
// refuses a batch only by the request's Mcp-Protocol-Version header,
// which a client may leave out (the SDK then assumes 2025-03-26) or set
// to an older version than its session's; and it runs the calls of a
// batch it accepts all at once.
func (h *Handler) admitBatch(w http.ResponseWriter, r *http.Request, rec *accessRecord, body []byte) (int, bool) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			"invalid request: a JSON-RPC batch cannot open a session (initialize goes alone); batches are for sessions of protocol version 2025-03-26 or earlier")
		return 0, false
	}
	var ss *mcp.ServerSession
	for s := range rec.server.Sessions() {
		if s.ID() == sid {
			ss = s
			break
		}
	}
	if ss == nil {
		return 1, true // no such session: the SDK answers 404 and runs nothing
	}
	version := ""
	if p := ss.InitializeParams(); p != nil {
		version = negotiatedVersion(p.ProtocolVersion)
	}
	if hv := r.Header.Get("Mcp-Protocol-Version"); hv != "" && (version == "" || hv > version) {
		version = hv
	}
	if version == "" || version >= firstWithoutBatches {
		what := "the session is not initialized"
		if version != "" {
			what = "protocol version " + version + " has none"
		}
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, fmt.Sprintf(
			"invalid request: JSON-RPC batches are not supported here (%s; they were removed in %s): send one message per request",
			what, firstWithoutBatches))
		return 0, false
	}
	limit := min(h.opts.MaxBatch, h.opts.Burst)
	n, calls, ok := batchLen(body, limit+1)
	if !ok {
		return 1, true // not a JSON array of values: the SDK answers 400
	}
	if n > limit {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, fmt.Sprintf(
			"invalid request: a JSON-RPC batch of more than %d messages; this server takes at most %d per batch", limit, limit))
		return 0, false
	}
	if calls > h.opts.TokenConcurrency {
		// The SDK runs a batch's calls all at once: more of them than
		// the token's turns would run beside other agents' requests on
		// more of the machine than its share.
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, fmt.Sprintf(
			"invalid request: a JSON-RPC batch of %d calls; this server runs at most %d of a token's calls at once, so send at most %d per batch (or one per request)",
			calls, h.opts.TokenConcurrency, h.opts.TokenConcurrency))
		return 0, false
	}
	if n <= 1 {
		return calls, true // the request paid for it
	}
	// The batch's first message was paid for as the request came in; it
	// waits for the others as a request waits for its rate (allow), and
	// its token is checked again after a wait, as a request's is.
	ok, waited := h.takeRate(w, r, rec.token.ID, float64(n-1), fmt.Sprintf("429 too many requests for this token: a batch of %d messages costs %d requests; retry after the Retry-After seconds", n, n))
	if !ok || waited && !h.stillValid(w, r, bearerToken(r)) {
		return 0, false
	}
	return calls, true
}

// batchLen counts the values of a JSON array, and the requests among
// them (messages with a method and an id), stopping at most values: it
// reports false when body is not an array of JSON values.
func batchLen(body []byte, most int) (n, requests int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return 0, 0, false
	}
	for dec.More() {
		if n++; n >= most {
			return n, requests, true
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, 0, false
		}
		if m, ok := readMessage(v); !ok || m.isRequest() {
			requests++
		}
	}
	return n, requests, true
}

// negotiatedVersion is the protocol version a session asking for client
// gets: the SDK's rule (its own version if supported, else the newest
// before 2026-07-28, the first with no initialize).
func negotiatedVersion(client string) string {
	supported := mcp.SupportedProtocolVersions()
	if slices.Contains(supported, client) && client < "2026-07-28" {
		return client
	}
	for _, v := range supported {
		if v < "2026-07-28" {
			return v
		}
	}
	return client
}

// writeRPCError answers with one JSON-RPC error response, id null: the
// answer to a message that was refused as a whole.
func writeRPCError(w http.ResponseWriter, status int, code int64, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
}
