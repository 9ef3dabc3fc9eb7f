package serve

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/engram-go/engram/internal/tokenbucket"
)

// A token's request bodies are paid for in bytes as well as requests
// (Options.TokenBytesRate and TokenBytesBurst). A request is what a
// token's rate counts, but what it costs the process grows with its body:
// decoding a 3 MiB tool call allocates about 25 times its size, and that
// garbage is collected while every agent's requests wait. So a token may
// send its bodies at a sustained rate of bytes. A request its token's
// budget cannot pay for yet waits, holding its turn, before its body is
// read: refused at once, a client that retries at once (as an abusive
// one does) would make the server pay for a connection and a refusal
// many times a second instead; waiting, it is paced to its budget at the
// cost of a connection. Only a wait past maxBytesWait is refused.

// maxBytesWait is the longest a request waits for its token's byte
// budget; one that would wait longer gets 429 with Retry-After. At the
// defaults no request waits that long (a body of at most MaxBodyBytes
// after a debt of at most as much, at 1 MiB a second).
const maxBytesWait = 10 * time.Second

// payBytes pays token id's byte budget for r's body, waiting (with the
// token's turn held) while the budget cannot pay what the body announces
// (its Content-Length), before the body is read. It answers and reports
// false when the wait would pass maxBytesWait (429 with Retry-After), or
// the request ends or the server starts shutting down while it waits
// (503). A body of no announced length is paid for as it is read. The payment may leave the budget in debt
// (requests paid for together, a body longer than the burst, or one that
// announced no length): the debt delays the token's next requests.
func (h *Handler) payBytes(w http.ResponseWriter, r *http.Request, id int64) bool {
	if h.opts.TokenBytesRate < 0 || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	rate, burst := h.opts.TokenBytesRate, float64(h.opts.TokenBytesBurst)
	// A body is read up to the body cap, and one longer than the burst
	// waits for a full budget.
	size := min(r.ContentLength, h.opts.MaxBodyBytes)
	need := min(float64(max(size, 1)), burst)
	for waited := false; ; waited = true {
		now := time.Now()
		h.mu.Lock()
		b := h.byteBucket(id, now)
		wait := b.WaitFor(now, need, rate, burst)
		if wait <= 0 && size > 0 {
			b.ChargeN(now, float64(size), rate, burst)
		}
		h.mu.Unlock()
		if wait <= 0 {
			break
		}
		if wait > maxBytesWait {
			h.metrics.bytesRefused(r.URL.Path)
			if rec, ok := r.Context().Value(recKey{}).(*accessRecord); ok {
				rec.refused = fmt.Sprintf("token %d has sent its share of request bytes (%d a second)", id, int64(rate))
			}
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			http.Error(w, fmt.Sprintf("429 too many request bytes for this token (%d a second, %d at once); retry after the Retry-After seconds", int64(rate), h.opts.TokenBytesBurst), http.StatusTooManyRequests)
			return false
		}
		if !waited {
			h.metrics.bytesWaited(r.URL.Path)
		}
		t := time.NewTimer(wait)
		select {
		case <-r.Context().Done():
			t.Stop()
			http.Error(w, "503 request ended while waiting for its token's byte budget", http.StatusServiceUnavailable)
			return false
		case <-h.drain.Done(): // it has not started: the drain need not wait for it
			t.Stop()
			w.Header().Set("Connection", "close")
			http.Error(w, "503 server shutting down", http.StatusServiceUnavailable)
			return false
		case <-t.C:
		}
	}
	if r.ContentLength < 0 {
		r.Body = &chargedBody{ReadCloser: r.Body, h: h, id: id}
	}
	return true
}

// byteBucket returns token id's byte budget; h.mu held.
func (h *Handler) byteBucket(id int64, now time.Time) *tokenbucket.Bucket {
	b, ok := h.bytes[id]
	if !ok {
		b = tokenbucket.Full(float64(h.opts.TokenBytesBurst), now)
		h.bytes[id] = b
	}
	return b
}

// chargedBody is a request body of no announced length, whose reads
// charge a token's byte budget.
type chargedBody struct {
	io.ReadCloser
	h  *Handler
	id int64
}

func (c *chargedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 {
		now := time.Now()
		c.h.mu.Lock()
		c.h.byteBucket(c.id, now).ChargeN(now, float64(n), c.h.opts.TokenBytesRate, float64(c.h.opts.TokenBytesBurst))
		c.h.mu.Unlock()
	}
	return n, err
}
