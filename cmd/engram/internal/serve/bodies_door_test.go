package serve_test

// Chunked bodies and /sync frames through the Handler, read in pooled
// pieces (bodyPieces): their bytes, their errors, several tokens at once,
// and what one token's bodies can make the pool hold.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/coder/websocket"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/testenv"
)

const bodyCap = 4 << 20 // MaxBodyBytes's default

// patterned is n bytes of [0-9a-z] that differ from piece to piece, so a
// piece copied to the wrong place, twice, or from another body shows.
func patterned(n int, seed int) string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[(i/7+i/32768*13+seed*5)%len(digits)]
	}
	return string(b)
}

// echoOfSize is an echo call of exactly size bytes: text, then spaces.
func echoOfSize(text string, size int) string {
	head, tail := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`, `"}}}`
	s := head + text + tail
	if len(s) > size {
		panic("echoOfSize: text too long")
	}
	return s + strings.Repeat(" ", size-len(s))
}

// echoed reports whether w answered the echo of text.
func echoed(w interface {
	Result() *http.Response
}, text string) (int, bool) {
	resp := w.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, bytes.Contains(b, []byte(`"text":"`+text+`"`))
}

// oddReads reads at most 32 KiB + 1 (a piece and one byte) at once,
// crossing every piece boundary mid-read.
type oddReads struct{ r io.Reader }

func (o oddReads) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 32<<10+1)]) }

// A chunked body that fails is refused, as io.ReadAll's error would have
// it: cut short (io.ErrUnexpectedEOF) after more than a piece, a wrapped
// io.EOF (not the reader's own end), any error with data; an empty one
// is answered as an empty body of Content-Length 0 is.
func TestChunkedBodyErrors(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: -1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	body := echoOfSize(patterned(80_000, 1), 90_000)
	cut := func(n int, err error) io.Reader {
		return io.MultiReader(strings.NewReader(body[:n]), iotest.ErrReader(err))
	}
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		r    io.Reader
	}{
		{"cut short after 70,000 bytes", cut(70_000, io.ErrUnexpectedEOF)},
		{"cut short at a piece's end", cut(32<<10, io.ErrUnexpectedEOF)},
		{"a wrapped EOF at its end", cut(len(body), fmt.Errorf("wrapped: %w", io.EOF))},
		{"an error with its last data", iotest.TimeoutReader(strings.NewReader(body))},
		{"an error at once", iotest.ErrReader(boom)},
	} {
		if w := d.serveBody(t.Context(), ada, sid, c.r, -1); w.Code != 400 {
			t.Errorf("%s: status %d, want 400", c.name, w.Code)
		}
	}
	empty := d.serveBody(t.Context(), ada, sid, strings.NewReader(""), -1)
	zero := d.serveBody(t.Context(), ada, sid, http.NoBody, 0)
	if empty.Code != zero.Code || empty.Code/100 != 4 {
		t.Errorf("an empty chunked body: status %d; an empty body of Content-Length 0: %d; want the same 4xx", empty.Code, zero.Code)
	}
	// the session is whole after it all
	if w := d.serveBody(t.Context(), ada, sid, strings.NewReader(echoCall(100)), -1); w.Code != 200 {
		t.Fatalf("a call after the failed bodies: status %d", w.Code)
	}
}

// A real chunked request cut short (the client half-closes inside a
// chunk, past the first piece) is answered 400, not run as a shorter
// body.
func TestTruncatedChunkedRequest(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: -1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	for _, sent := range []int{100, 40_000, 32 << 10} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(d.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		var req bytes.Buffer
		fmt.Fprintf(&req, "POST /mcp HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n", strings.TrimPrefix(d.url, "http://"))
		for k, v := range mcpHeader(ada, sid) {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
		body := echoCall(100_000)
		fmt.Fprintf(&req, "\r\n%x\r\n%s", len(body), body[:sent])
		conn.Write(req.Bytes())
		conn.(*net.TCPConn).CloseWrite()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%d bytes of a 100,000-byte chunk: %v", sent, err)
		}
		if resp.StatusCode != 400 {
			t.Errorf("%d bytes of a 100,000-byte chunk: status %d, want 400", sent, resp.StatusCode)
		}
		conn.Close()
	}
}

// Bodies of several tokens read at once, through the one pool, each get
// their own bytes: a body never shares a piece another request reuses.
func TestConcurrentChunkedBodies(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: -1})
	const tokens, rounds = 6, 4
	var wg sync.WaitGroup
	errs := make(chan string, tokens*rounds)
	for k := range tokens {
		tok := d.token(t, accesstoken.Spec{Agent: fmt.Sprintf("agent%d", k)})
		sid := d.session(t, tok)
		wg.Go(func() {
			for r := range rounds {
				text := patterned(66_000+k*1000+r*33_000, k*rounds+r)
				w := d.serveBody(context.Background(), tok, sid, oddReads{strings.NewReader(echoOfSize(text, len(text)+300))}, -1)
				if code, ok := echoed(w, text); code != 200 || !ok {
					errs <- fmt.Sprintf("token %d, round %d: status %d, echoed its own text: %v", k, r, code, ok)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// What a token's concurrent chunked bodies can make the pool hold is
// bounded by its turns: eight 16 MiB bodies of one token at
// TokenConcurrency 1 are read one at a time, and allocate the pieces of
// one body (4 MiB), not eight.
func TestChunkedBodiesOfOneTokenOnePieceSet(t *testing.T) {
	if testenv.Race {
		t.Skip("the race detector's sync.Pool drops a quarter of its puts")
	}
	d := newDoor(t, &serve.Options{TokenBytesRate: -1, TokenConcurrency: 1, TokenQueue: 16})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	const n = 8
	var codes [n]int
	got := testenv.HeapAllocated(func() {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				codes[i] = d.serveBody(context.Background(), ada, sid, io.LimitReader(spaces{}, 16<<20), -1).Code
			})
		}
		wg.Wait()
	})
	for i, c := range codes {
		if c != 413 {
			t.Fatalf("body %d: status %d, want 413", i, c)
		}
	}
	t.Logf("%d concurrent refused 16 MiB chunked bodies of one token: %.2f MiB allocated", n, float64(got)/(1<<20))
	if got > bodyCap+2<<20 {
		t.Errorf("%d concurrent 16 MiB chunked bodies of one token (TokenConcurrency 1) allocated %d bytes; want about one body's pieces (%d)", n, got, bodyCap)
	}
}

// A /sync frame of exactly the read limit (a multiple of the piece) is
// read and answered, and the connection stays open; one byte more
// closes it 1009; an empty frame is answered as any frame that is not a
// message.
func TestSyncFrameAtReadLimit(t *testing.T) {
	const limit = 64 << 10
	d := newDoor(t, &serve.Options{SyncMaxMessageBytes: limit})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	c, _ := d.syncPeer(t, ada, false)
	read := func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, _, err := c.Read(ctx)
		return err
	}
	sendJoin(t, c)
	if err := read(); err != nil {
		t.Fatalf("join: %v", err)
	}
	for _, f := range [][]byte{{}, bytes.Repeat([]byte{0xa0}, limit), bytes.Repeat([]byte{0xa0}, 32<<10)} {
		if err := c.Write(t.Context(), websocket.MessageBinary, f); err != nil {
			t.Fatal(err)
		}
		if err := read(); err != nil {
			t.Fatalf("a %d-byte frame (limit %d): %v; want an answer", len(f), limit, err)
		}
	}
	c.Write(t.Context(), websocket.MessageBinary, bytes.Repeat([]byte{0xa0}, limit+1))
	if err := read(); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("a frame one byte past the limit: %v, want 1009", err)
	}
}
