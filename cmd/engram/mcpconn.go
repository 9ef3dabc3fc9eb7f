package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON-RPC 2.0 error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternalError  = -32603
)

// maxFrame bounds one inbound line; a longer one is answered with a parse
// error and skipped.
const maxFrame = 16 << 20

// maxBatch bounds the messages of one batch (protocol versions before
// 2025-06-18); a longer one is refused whole (-32600) before any of it
// runs, so one line cannot queue an unbounded reply array. engram serve's
// default (serve.Options.MaxBatch) is the same.
const maxBatch = 32

// framedTransport serves MCP over newline-delimited JSON-RPC on r and w
// (stdin and stdout), in front of the SDK: every line is checked before the
// SDK sees it, so no byte sequence can end the session. A line that is not
// JSON gets -32700; valid JSON that is not a JSON-RPC 2.0 message (a
// number, null, an object id, another jsonrpc version, ...) gets -32600;
// a batch gets what the negotiated protocol version says (batches were
// removed in 2025-06-18: -32600; earlier versions get one response array).
// When the input ends, requests already handed to the SDK are answered
// before Read reports the end, so piped input gets every reply.
type framedTransport struct {
	r io.Reader
	w io.Writer
}

func (t *framedTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &framedConn{w: t.w, in: make(chan jsonrpc.Message), done: make(chan struct{}), pending: map[any]bool{}}
	c.idle = sync.NewCond(&c.mu)
	go c.readLoop(t.r)
	return c, nil
}

type framedConn struct {
	w  io.Writer
	in chan jsonrpc.Message // valid single messages for the SDK

	wmu sync.Mutex // serialises writes to w

	mu          sync.Mutex
	idle        *sync.Cond // signalled when pending empties
	pending     map[any]bool
	batches     []*framedBatch
	version     string // negotiated protocol version
	initID      any    // id of the initialize request
	initialized bool
	eof         error

	closed    bool
	closeOnce sync.Once
	done      chan struct{}
}

// framedBatch collects the responses to one inbound batch (protocol
// versions before 2025-06-18), written as one array when complete.
type framedBatch struct {
	want      map[any]int // request id → position
	responses []json.RawMessage
	left      int
}

func (c *framedConn) SessionID() string { return "" }

func (c *framedConn) readLoop(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readFrame(br)
		if len(bytes.TrimSpace(line)) > 0 || errors.Is(err, errFrameTooLong) {
			c.frame(line, err)
		}
		if err != nil && !errors.Is(err, errFrameTooLong) {
			break
		}
	}
	// End of input: let in-flight requests finish before the SDK hears.
	c.mu.Lock()
	for len(c.pending) > 0 && !c.closed {
		c.idle.Wait()
	}
	c.eof = err
	c.mu.Unlock()
	close(c.in)
}

var errFrameTooLong = errors.New("line too long")

// readFrame reads one line (without its newline), at most maxFrame bytes;
// a longer line is consumed to its end and reported as errFrameTooLong.
func readFrame(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxFrame {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			return nil, errFrameTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// frame checks one line and hands valid messages to the SDK.
func (c *framedConn) frame(line []byte, err error) {
	if errors.Is(err, errFrameTooLong) {
		c.reply(nil, codeParseError, fmt.Sprintf("parse error: a message is longer than %d bytes", maxFrame))
		return
	}
	line = bytes.TrimSpace(line)
	if !utf8.Valid(line) || !json.Valid(line) {
		c.reply(nil, codeParseError, "parse error: the line is not valid JSON (one JSON-RPC message per line)")
		return
	}
	if line[0] == '[' {
		c.batch(line)
		return
	}
	if msg, _, ok := c.check(line); ok {
		c.deliver(msg)
	}
}

// check validates one message; on failure it has already replied.
func (c *framedConn) check(raw json.RawMessage) (jsonrpc.Message, any, bool) {
	var env struct {
		JSONRPC *string          `json:"jsonrpc"`
		ID      json.RawMessage  `json:"id"` // not a pointer: "id":null must read as present
		Method  *json.RawMessage `json:"method"`
	}
	if raw[0] != '{' || json.Unmarshal(raw, &env) != nil {
		c.reply(nil, codeInvalidRequest, "invalid request: a JSON-RPC message is a JSON object")
		return nil, nil, false
	}
	var id any
	if len(env.ID) > 0 {
		if err := json.Unmarshal(env.ID, &id); err != nil {
			id = nil
		}
		switch id.(type) {
		case string:
		case float64:
			// The SDK keeps numeric ids as int64 (through float64): any
			// other number would be answered under another id.
			if !exactIntegerID(env.ID) {
				c.reply(nil, codeInvalidRequest, fmt.Sprintf("invalid request: numeric id %s is not an integer of magnitude at most 2^53; use a string id", env.ID))
				return nil, nil, false
			}
		case nil:
			if env.Method != nil { // a response may carry null (to an unparsable request)
				c.reply(nil, codeInvalidRequest, "invalid request: a request id must not be null; leave id out for a notification")
				return nil, nil, false
			}
		default:
			c.reply(nil, codeInvalidRequest, "invalid request: id must be a string or an integer")
			return nil, nil, false
		}
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		c.reply(id, codeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		return nil, nil, false
	}
	if env.Method != nil {
		var m string
		if json.Unmarshal(*env.Method, &m) != nil || m == "" {
			c.reply(id, codeInvalidRequest, "invalid request: method must be a non-empty string")
			return nil, nil, false
		}
	}
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		c.reply(id, codeInvalidRequest, "invalid request: "+err.Error())
		return nil, nil, false
	}
	return msg, id, true
}

// batch handles a JSON array of messages.
func (c *framedConn) batch(line []byte) {
	var items []json.RawMessage
	if err := json.Unmarshal(line, &items); err != nil || len(items) == 0 {
		c.reply(nil, codeInvalidRequest, "invalid request: an empty or malformed batch")
		return
	}
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if version == "" || version >= "2025-06-18" {
		c.reply(nil, codeInvalidRequest, fmt.Sprintf("invalid request: JSON-RPC batches are not supported in protocol version %s; send one message per line", cmpOr(version, "2025-06-18")))
		return
	}
	if len(items) > maxBatch {
		c.reply(nil, codeInvalidRequest, fmt.Sprintf("invalid request: a JSON-RPC batch of %d messages; at most %d per batch", len(items), maxBatch))
		return
	}
	b := &framedBatch{want: map[any]int{}}
	var msgs []jsonrpc.Message
	for _, it := range items {
		it = bytes.TrimSpace(it)
		msg, ok := c.checkInBatch(it, b)
		if !ok {
			continue
		}
		if req, isReq := msg.(*jsonrpc.Request); isReq && req.IsCall() {
			// Responses find their request by id: an id twice in flight
			// would lose one of them.
			c.mu.Lock()
			_, inFlight := c.pending[req.ID.Raw()]
			c.mu.Unlock()
			if _, twice := b.want[req.ID.Raw()]; twice || inFlight {
				b.responses = append(b.responses, errorResponse(req.ID.Raw(), codeInvalidRequest,
					fmt.Sprintf("invalid request: id %v is already used by a request in flight", req.ID.Raw())))
				continue
			}
			b.want[req.ID.Raw()] = len(b.responses)
			b.responses = append(b.responses, nil)
			b.left++
		}
		msgs = append(msgs, msg)
	}
	if b.left > 0 {
		c.mu.Lock()
		c.batches = append(c.batches, b)
		c.mu.Unlock()
	} else if len(b.responses) > 0 {
		c.writeRaw(mustJSON(b.responses))
	}
	for _, m := range msgs {
		c.deliver(m)
	}
}

// checkInBatch validates one batch element; an invalid one gets its error
// response inside the batch's array.
func (c *framedConn) checkInBatch(raw json.RawMessage, b *framedBatch) (jsonrpc.Message, bool) {
	var sink bytes.Buffer
	sub := &framedConn{w: &sink, pending: map[any]bool{}}
	msg, _, ok := sub.check(raw)
	if !ok {
		b.responses = append(b.responses, json.RawMessage(bytes.TrimSpace(sink.Bytes())))
	}
	return msg, ok
}

// exactIntegerID reports whether a JSON number is an integer that survives
// a float64 exactly (|n| <= 2^53), written without fraction or exponent.
func exactIntegerID(raw json.RawMessage) bool {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return err == nil && n >= -(1<<53) && n <= 1<<53
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// deliver hands a message to the SDK, recording calls as pending.
func (c *framedConn) deliver(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		c.pending[req.ID.Raw()] = true
		if req.Method == "initialize" {
			c.initID = req.ID.Raw()
		}
		c.mu.Unlock()
	}
	select {
	case c.in <- msg:
	case <-c.done:
	}
}

func (c *framedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, io.EOF
	case m, ok := <-c.in:
		if !ok {
			c.mu.Lock()
			err := c.eof
			c.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return nil, err
		}
		return m, nil
	}
}

func (c *framedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.fixError(resp)
		c.noteInitialize(resp)
		id := resp.ID.Raw()
		data, err := jsonrpc.EncodeMessage(resp)
		if err != nil {
			// An error here would end the session: the request gets an
			// internal error instead.
			data = errorResponse(id, codeInternalError, "internal error: the reply could not be encoded as JSON")
		}
		c.mu.Lock()
		var done []json.RawMessage
		for i, b := range c.batches {
			if pos, in := b.want[id]; in {
				b.responses[pos] = data
				delete(b.want, id)
				if b.left--; b.left == 0 {
					done = b.responses
					c.batches = append(c.batches[:i], c.batches[i+1:]...)
				}
				data = nil
				break
			}
		}
		c.mu.Unlock()
		var werr error
		switch {
		case data != nil:
			werr = c.writeRaw(data)
		case done != nil:
			werr = c.writeRaw(mustJSON(done))
		}
		c.mu.Lock()
		delete(c.pending, id)
		if len(c.pending) == 0 {
			c.idle.Broadcast()
		}
		c.mu.Unlock()
		return werr
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeRaw(data)
}

// fixError gives every error response a JSON-RPC code: the SDK sends plain
// Go errors with code 0.
func (c *framedConn) fixError(resp *jsonrpc.Response) {
	if resp.Error == nil {
		return
	}
	if msg := resp.Error.Error(); strings.Contains(msg, `missing required "params"`) {
		// The SDK calls a request without params (tools/call,
		// resources/read, prompts/get, ...) an invalid request; JSON-RPC
		// calls missing method parameters invalid params.
		resp.Error = &jsonrpc.Error{Code: codeInvalidParams, Message: `invalid params: this method needs "params" (an object), none or null was sent`}
		return
	}
	var we *jsonrpc.Error
	if errors.As(resp.Error, &we) && we.Code != 0 {
		return
	}
	msg := resp.Error.Error()
	code := int64(codeInternalError)
	switch {
	case strings.Contains(msg, "invalid during session initialization"):
		code = codeInvalidRequest
		msg = "invalid request: the session is not initialized; send initialize first (" + msg + ")"
	case strings.Contains(msg, `duplicate "initialize"`):
		code = codeInvalidRequest
		msg = "invalid request: the session is already initialized (" + msg + ")"
	}
	resp.Error = &jsonrpc.Error{Code: code, Message: msg}
}

// noteInitialize records the negotiated protocol version from the
// initialize response.
func (c *framedConn) noteInitialize(resp *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.initialized || c.initID == nil || resp.ID.Raw() != c.initID || resp.Error != nil {
		return
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(resp.Result, &r) == nil {
		c.version, c.initialized = r.ProtocolVersion, true
	}
}

// reply writes a JSON-RPC error response for a message that never reaches
// the SDK.
func (c *framedConn) reply(id any, code int, msg string) {
	c.writeRaw(errorResponse(id, code, msg))
}

// errorResponse is a JSON-RPC error response.
func errorResponse(id any, code int, msg string) json.RawMessage {
	resp := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id}
	resp.Error.Code, resp.Error.Message = code, msg
	return mustJSON(resp)
}

func (c *framedConn) writeRaw(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(bytes.TrimSpace(data), '\n'))
	return err
}

func (c *framedConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.mu.Lock()
		c.closed = true
		c.idle.Broadcast()
		c.mu.Unlock()
	})
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return b
}
