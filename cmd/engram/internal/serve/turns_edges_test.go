package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// Waiters that leave give their bytes back, and the budget never holds
// more than its burst for it: a refund may leave the bucket past the
// burst for a moment, but every use refills first and refill caps at the
// burst, so after a full burst the next call still waits ~1.6 s.
func TestTokenBytesRefundStaysWithinBurst(t *testing.T) {
	const rate, burst, size = 10_000, 16_000, 16_000
	d := newDoor(t, &serve.Options{TokenBytesRate: rate, TokenBytesBurst: burst, TokenConcurrency: 3, TokenQueue: 4, MetricsToken: metricsSecret})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	body := echoCall(size)
	serve1 := func(ctx context.Context) int {
		return d.serveBody(ctx, ada, sid, strings.NewReader(body), size).Code
	}
	// Each waiter's wait is fixed when its bytes are charged: the budget
	// emptied at or after start, the k-th waiter's ends k × 1.6 s after.
	start := time.Now()
	if st := serve1(t.Context()); st != 200 { // empties the budget
		t.Fatalf("the first call: status %d", st)
	}
	const waits = `engram_serve_bytes_waits_total{door="mcp"}`
	before := d.scrape(t)[waits] // (the first call may have waited for the session's bytes)
	waiting := func(n float64) {
		waitFor(t, fmt.Sprintf("%v calls to wait for the byte budget", n), func() bool {
			return d.scrape(t)[waits] == before+n
		})
	}
	var wg sync.WaitGroup
	ctxA, cancelA := context.WithCancel(t.Context())
	ctxB, cancelB := context.WithCancel(t.Context())
	defer cancelA()
	defer cancelB()
	var stA1, stA2, stB int
	wg.Go(func() { stA1 = serve1(ctxA) }) // waits ~1.6 s
	waiting(1)
	wg.Go(func() { stA2 = serve1(ctxA) }) // waits ~3.2 s
	waiting(2)
	wg.Go(func() { stB = serve1(ctxB) }) // waits ~4.8 s
	waiting(3)
	cancelA() // the first two give up: their bytes come back
	time.Sleep(time.Until(start.Add(4300 * time.Millisecond)))
	cancelB() // the last gives up just before its wait ends
	wg.Wait()
	if stA1 != 503 || stA2 != 503 || stB != 503 {
		t.Fatalf("the waiters that gave up: statuses %d %d %d, want 503s", stA1, stA2, stB)
	}
	if st := serve1(t.Context()); st != 200 {
		t.Fatalf("a full burst after the refunds: status %d", st)
	}
	start = time.Now()
	if st := serve1(t.Context()); st != 200 {
		t.Fatalf("the next call: status %d", st)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("after a full burst (%d bytes) was sent, another %d-byte call waited only %v (want ~1.6 s): the refunds left the budget above its burst", burst, size, took)
	}
}

// Bodies of odd shape that the go-sdk would run as a call (or rejects)
// are never judged notification-only: each waits for the turn a running
// call holds (TokenConcurrency 1) or is answered, so no second call runs.
// Among them, calls with an extra key that encoding/json would match
// case-insensitively ("ID":null read as the id): the door matches keys
// exactly, as the go-sdk does.
func TestTurnsOddBodiesTakeTurns(t *testing.T) {
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"hold","arguments":{}}}`
	}
	for name, body := range map[string]string{
		"id 0":                 call("0"),
		`id ""`:                call(`""`),
		"id false":             call("false"),
		"id 1.5":               call("1.5"),
		"id -0":                call("-0"),
		"id {}":                call("{}"),
		"id null then 3":       strings.Replace(call("null"), `"id":null`, `"id":null,"id":3`, 1),
		"id 3 then null":       strings.Replace(call("3"), `"id":3`, `"id":3,"id":null`, 1),
		`escaped \u0069d null`: strings.TrimSuffix(call("3"), "}") + `,"\u0069d":null}`,
		"dotless ıd null":      strings.TrimSuffix(call("3"), "}") + `,"ıd":null}`,
		"method null":          `{"jsonrpc":"2.0","id":3,"method":null}`,
		"trailing garbage":     call("3") + "x",
		"trailing object":      call("3") + `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		"BOM":                  "\ufeff" + call("3"),
		"leading whitespace":   " \r\n\t" + call("3"),
		"not JSON":             "hello",
		"empty":                "",
		`extra "ID":null`:      strings.TrimSuffix(holdCall, "}") + `,"ID":null}`,
		`extra "Id":null`:      strings.TrimSuffix(holdCall, "}") + `,"Id":null}`,
		`extra "METHOD":null`:  strings.TrimSuffix(holdCall, "}") + `,"METHOD":null}`,
	} {
		t.Run(name, func(t *testing.T) {
			d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: 4})
			ada := d.token(t, accesstoken.Spec{Agent: "ada"})
			s1, s2 := d.session(t, ada), d.session(t, ada)
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Go(func() { d.callStatus(t.Context(), t, ada, s1, holdCall) })
			waitFor(t, "the first call to run", func() bool { return d.hold.running.Load() == 1 })
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			st := make(chan int, 1)
			wg.Go(func() { s, _ := d.callStatus(ctx, t, ada, s2, body); st <- s })
			time.Sleep(300 * time.Millisecond)
			running := d.hold.running.Load()
			_, waiting := serve.Turns(d.h)
			answered := -1
			select {
			case answered = <-st:
			default:
			}
			cancel()
			close(d.hold.release)
			if running > 1 {
				t.Fatalf("%s: %d calls run at once at TokenConcurrency 1", name, running)
			}
			if waiting != 1 && answered == -1 {
				t.Fatalf("%s: neither waiting for a turn nor answered", name)
			}
		})
	}
}

// A small (read-before-the-wait) body whose client leaves while it
// waits for bytes gives its bytes and its turn back: the token's next
// call is served at once, and no line is left.
func TestTurnsEarlyWaiterRefunds(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: 100, TokenBytesBurst: 5000, TokenConcurrency: 1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if w := d.serveBody(ctx, ada, sid, strings.NewReader(echoCall(10_000)), 10_000); w.Code != 503 {
		t.Fatalf("a 10,000-byte call whose client left while it waited: status %d, want 503", w.Code)
	}
	if tokens, waiting := serve.Turns(d.h); tokens != 0 || waiting != 0 {
		t.Fatalf("after it: %d lines, %d waiting", tokens, waiting)
	}
	start := time.Now()
	if w := d.serveBody(t.Context(), ada, sid, strings.NewReader(echoCall(4000)), 4000); w.Code != 200 || time.Since(start) > time.Second {
		t.Fatalf("a 4,000-byte call after the refund: status %d after %v", w.Code, time.Since(start))
	}
}

// A call answered by the door itself (missing params: -32602)
// gives its turn back; and a notification-only POST leaves no line.
func TestTurnsDoorAnswersLeaveNoLine(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: 1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":5,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
		`{"jsonrpc":"2.0","id":99,"result":{}}`,
	} {
		resp := d.send(t, ada, sid, body, false)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		waitFor(t, "no line after "+body, func() bool { n, w := serve.Turns(d.h); return n == 0 && w == 0 })
	}
}

// A batch led by JSON whitespace, or carrying trailing bytes the
// go-sdk ignores, is still seen as a batch and its calls counted: two
// hold calls at TokenConcurrency 1 are refused (400) before any runs.
func TestTurnsDisguisedBatchRefused(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: 4})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	const v = "2025-03-26"
	sid := d.sessionAt(t, ada, v)
	h := mcpHeader(ada, sid)
	h["Mcp-Protocol-Version"] = v
	for _, body := range []string{" \r\n\t" + holdBatch(10, 2), holdBatch(20, 2) + "]x", holdBatch(30, 2) + ` {"a":1}`} {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		resp, err := d.postMCP(ctx, h, body)
		st := 0
		if err == nil {
			st = resp.StatusCode
			resp.Body.Close()
		}
		cancel()
		if st != http.StatusBadRequest || d.hold.most.Load() > 0 {
			t.Fatalf("batch %.40q…: status %d, %d calls ran; want 400 and none", body, st, d.hold.most.Load())
		}
	}
}

// A small body is read before its turn, and that read counts against the
// token's queue: a client that sends its bodies slowly (headers and a
// few bytes, then nothing) holds at most TokenQueue of them, and the
// rest are refused 429 at once, as waiters beyond the queue are.
func TestTurnsSlowSmallBodiesCountAgainstQueue(t *testing.T) {
	const queue, n = 2, 10
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: queue})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	if refused := d.slowBodies(t, ada, sid, n); refused != n-queue {
		t.Fatalf("%d slow bodies of one token at TokenQueue %d: %d refused 429 at once; want %d", n, queue, refused, n-queue)
	}
	if _, waiting := serve.Turns(d.h); waiting != queue {
		t.Fatalf("%d slow bodies of one token at TokenQueue %d: %d held; want %d", n, queue, waiting, queue)
	}
	// Any refusal of a body still arriving is answered at once (its
	// connection closed), not after net/http has waited for the rest:
	// here the rate limit's, past a burst of 3.
	r := newDoor(t, &serve.Options{Rate: 1e-3, Burst: 3, TokenQueue: 16})
	bob := r.token(t, accesstoken.Spec{Agent: "bob"})
	bsid := r.session(t, bob)
	if refused := r.slowBodies(t, bob, bsid, n); refused < n-3 {
		t.Fatalf("%d slow bodies past a burst of 3: %d refused 429 at once; want at least %d", n, refused, n-3)
	}
}

// slowBodies opens n connections that each send a POST /mcp on session
// sid of tok announcing 1,000 bytes and send 11, and reports how many
// were answered 429 within a second (the rest are held by the door;
// a refusal comes after refusalDrain, 100 ms).
func (d *door) slowBodies(t *testing.T, tok, sid string, n int) (refused int) {
	t.Helper()
	host := strings.TrimPrefix(d.url, "http://")
	for range n {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", host, tok, sid)
		c.SetReadDeadline(time.Now().Add(time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("a slow 1,000-byte body: status %d, want 429 or no answer yet", resp.StatusCode)
			}
			refused++
		}
	}
	return refused
}
