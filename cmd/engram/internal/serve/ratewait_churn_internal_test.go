package serve

import (
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Many concurrent allow calls of one token, a third of them
// cancelled at random points of their wait. Afterwards nothing is counted
// as waiting, the bucket never holds more than its burst, and the
// admissions never beat rate × time + burst (the give-backs never let
// more in than the rate).
func TestRateWaitArithmeticUnderChurn(t *testing.T) {
	const rate, burst, workers, per = 20.0, 10, 64, 6
	h, err := New(&Options{Rate: rate, Burst: burst, MaxTokenSessions: 50, Tokens: nopTokens{},
		MCPServer: func(context.Context, string, bool) (*mcp.Server, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	const id = 9
	start := time.Now()
	var mu sync.Mutex
	var admitted []time.Duration
	var wg sync.WaitGroup
	var refused, ended int
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range per {
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(3) == 0 {
					time.AfterFunc(time.Duration(r.IntN(500))*time.Millisecond, cancel)
				}
				rec := httptest.NewRecorder()
				ok, _ := h.allow(rec, httptest.NewRequest("POST", "/mcp", nil).WithContext(ctx), id)
				cancel()
				mu.Lock()
				switch {
				case ok:
					admitted = append(admitted, time.Since(start))
				case rec.Code == 429:
					refused++
				default:
					ended++
				}
				mu.Unlock()
				if rec.Code == 429 {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	if n := h.waitingForRate(id); n != 0 {
		t.Fatalf("%d still counted as waiting", n)
	}
	h.mu.Lock()
	_, leftover := h.rateWaiting[id]
	h.mu.Unlock()
	if leftover {
		t.Fatal("rateWaiting keeps an entry for the token")
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i] < admitted[j] })
	worst := 0.0
	var wi, wj int
	for i := range admitted {
		for j := i; j < len(admitted); j++ {
			allowed := burst + rate*(admitted[j]-admitted[i]).Seconds() + 1 // +1: timer slack
			if over := float64(j-i+1) - allowed; over > worst {
				worst, wi, wj = over, i, j
			}
		}
	}
	time.Sleep(1000 * time.Millisecond) // refill past the burst
	h.mu.Lock()
	b := *h.limits[id]
	h.mu.Unlock()
	now := time.Now()
	full := b.WaitFor(now, burst, rate, burst) == 0
	over := b.WaitFor(now, burst+1e-6, rate, burst) == 0
	t.Logf("%d admitted, %d refused 429, %d ended early (503) in %v; worst excess over rate×t+burst %.2f; bucket full at rest %v",
		len(admitted), refused, ended, time.Since(start).Round(time.Millisecond), worst, full)
	t.Logf("worst window: %d admissions from %v to %v", wj-wi+1, admitted[wi], admitted[wj])
	if worst > 0 {
		t.Fatalf("admissions beat the rate by %.2f requests", worst)
	}
	if over || !full {
		t.Fatalf("bucket at rest: full %v, over its burst %v", full, over)
	}
}
