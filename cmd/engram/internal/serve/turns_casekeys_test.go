package serve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// A batch's calls are counted on exact keys, as the go-sdk reads them: a
// batch of calls each carrying "ID":null (which encoding/json would take
// for the id, making them notifications) is still refused for holding
// more calls than TokenConcurrency, and none of them runs.
func TestTurnsCaseKeyBatchCounted(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: 4})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	const v = "2025-03-26"
	sid := d.sessionAt(t, ada, v)
	h := mcpHeader(ada, sid)
	h["Mcp-Protocol-Version"] = v
	const n = 8
	batch := strings.ReplaceAll(holdBatch(10, n), `"method":"tools/call"`, `"method":"tools/call","ID":null`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	status := make(chan int, 1)
	wg.Go(func() {
		resp, err := d.postMCP(ctx, h, batch)
		if err != nil {
			status <- 0
			return
		}
		status <- resp.StatusCode
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && d.hold.running.Load() < n {
		time.Sleep(5 * time.Millisecond)
	}
	running := d.hold.running.Load()
	st := "no answer yet"
	select {
	case s := <-status:
		st = fmt.Sprint(s)
	default:
	}
	cancel()
	close(d.hold.release)
	if running > 1 {
		t.Fatalf("TokenConcurrency 1: a batch of %d calls (each with \"ID\":null) was admitted (status: %s) and runs %d calls at once; want it refused -32600", n, st, running)
	}
}

// A call carrying "ID":null pays the byte budget like any call, not as a
// notification (charged without waiting): at 100 bytes a second and a
// burst of 20,000, the second and third of three 15,000-byte calls get
// 429 (each would wait 100+ s).
func TestTurnsCaseKeyCallPaysBytes(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: 100, TokenBytesBurst: 20_000})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	body := strings.TrimSuffix(echoCall(15_000), "}") + `,"ID":null}`
	var got []int
	for range 3 {
		resp := d.send(t, ada, sid, body, false)
		io.Copy(io.Discard, resp.Body)
		got = append(got, resp.StatusCode)
	}
	if got[1] != http.StatusTooManyRequests || got[2] != http.StatusTooManyRequests {
		t.Fatalf("three 15,000-byte calls (\"ID\":null) on a 20,000-byte burst at 100 B/s: statuses %v, echo ran %d times; want 200, 429, 429",
			got, d.calls.Load())
	}
}
