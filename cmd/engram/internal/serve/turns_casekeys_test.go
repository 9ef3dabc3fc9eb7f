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

// caseTricks are tools/call bodies that hasRequest (encoding/json, whose
// struct fields match keys case-insensitively, the last match winning)
// reads as a notification, while the go-sdk (segmentio/encoding with
// DontMatchCaseInsensitiveStructFields: exact keys only) reads them as
// the call with id 2.
var caseTricks = map[string]string{
	`"ID":null`:     strings.TrimSuffix(holdCall, "}") + `,"ID":null}`,
	`"Id":null`:     strings.TrimSuffix(holdCall, "}") + `,"Id":null}`,
	`"METHOD":null`: strings.TrimSuffix(holdCall, "}") + `,"METHOD":null}`,
}

// DEFECT: hasRequest decodes with encoding/json, which matches "ID"/"Id"
// and "METHOD" to the id and method fields (last key wins), so a call
// carrying `"id":2,…,"ID":null` is judged notification-only and takes no
// turn; the go-sdk matches keys exactly, sees id 2 and runs the call. One
// token can thus run any number of calls at once (bounded only by
// Rate/Burst, 100 at once by default) whatever TokenConcurrency says:
// the per-token share of the machine is gone for any client that adds
// one key.
func TestTurnsAttackCaseKeyCallTakesNoTurn(t *testing.T) {
	for name, body := range caseTricks {
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
			wg.Go(func() { d.callStatus(ctx, t, ada, s2, body) })
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) && d.hold.running.Load() < 2 {
				time.Sleep(5 * time.Millisecond)
			}
			running := d.hold.running.Load()
			_, waiting := serve.Turns(d.h)
			cancel()
			close(d.hold.release)
			if running > 1 {
				t.Fatalf("TokenConcurrency 1: %d of ada's calls run at once (the second, with %s, took no turn; %d waiting)", running, name, waiting)
			}
		})
	}
}

// DEFECT (same root): the batch admission counts a batch's calls with
// hasRequest, so a batch of calls each carrying "ID":null counts 0 calls:
// it is not refused for holding more calls than TokenConcurrency, and it
// takes no turn at all; the go-sdk runs all its calls side by side.
func TestTurnsAttackCaseKeyBatchTakesNoTurn(t *testing.T) {
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
		req, _ := http.NewRequestWithContext(ctx, "POST", d.url+"/mcp", strings.NewReader(batch))
		for k, val := range h {
			req.Header.Set(k, val)
		}
		resp, err := http.DefaultClient.Do(req)
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

// DEFECT (same root): a call that hasRequest misjudges as notification-
// only is "charged without waiting", so the byte budget never holds it:
// at 100 bytes a second and a burst of 20,000, three 15,000-byte calls
// in a row are all served at once, where the second should get 429 (it
// would wait 100+ s).
func TestTurnsAttackCaseKeyCallSkipsByteBudget(t *testing.T) {
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
