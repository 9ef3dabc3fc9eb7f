package serve

import (
	"errors"
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

// payBytes pays token id's byte budget for r's body before it is read,
// waiting (with the token's turn held) while the budget is short of what
// the body announces (its Content-Length, or the burst if longer). The
// bytes are taken from the budget as the wait begins, so the token's
// later requests queue behind this one's debt instead of taking the bytes
// it waits for; they are given back if it does not go on. It answers and
// reports false when the wait would pass maxBytesWait (429 with
// Retry-After), or the request ends or the server starts shutting down
// while it waits (503). A body of no announced length is paid for as it
// is read, each read waiting for the debt it makes (chargedBody). With
// pace false (a request that takes no turn: a body of notifications
// only, already read), the bytes are charged and nothing waits. It
// reports whether the request waited (its caller then checks its
// credential again).
func (h *Handler) payBytes(w http.ResponseWriter, r *http.Request, id int64, pace bool) (waited, ok bool) {
	if !h.bytesBudgeted() || r.Body == nil || r.Body == http.NoBody {
		return false, true
	}
	rate, burst := h.opts.TokenBytesRate, float64(h.opts.TokenBytesBurst)
	if r.ContentLength < 0 {
		r.Body = &chargedBody{ReadCloser: r.Body, h: h, r: r, id: id}
		return false, true
	}
	size := float64(max(r.ContentLength, 1))
	need := min(size, burst) // a body longer than the burst waits for a full budget
	now := time.Now()
	h.mu.Lock()
	b := h.byteBucket(id, now)
	wait := b.WaitFor(now, need, rate, burst)
	if !pace {
		wait = 0
	}
	if wait <= maxBytesWait {
		b.ChargeN(now, size, rate, burst)
	}
	h.mu.Unlock()
	if wait <= 0 {
		return false, true
	}
	if wait > maxBytesWait {
		h.refuseBytes(w, r, id, wait)
		return false, false
	}
	h.metrics.bytesWaited(r.URL.Path)
	if msg, ok := h.waitBytes(r, wait); !ok {
		now := time.Now()
		h.mu.Lock()
		h.byteBucket(id, now).ChargeN(now, -size, rate, burst) // given back
		h.mu.Unlock()
		if h.drain.Err() != nil {
			w.Header().Set("Connection", "close")
		}
		http.Error(w, msg, http.StatusServiceUnavailable)
		return true, false
	}
	return true, true
}

// bytesBudgeted reports whether request bodies are paid for in bytes
// (a negative or infinite TokenBytesRate turns the budget off).
func (h *Handler) bytesBudgeted() bool {
	return h.opts.TokenBytesRate >= 0 && !math.IsInf(h.opts.TokenBytesRate, 1)
}

// waitBytes waits d for r's bytes; it reports false, with the 503's
// message, when r ends or the server starts shutting down first.
func (h *Handler) waitBytes(r *http.Request, d time.Duration) (string, bool) {
	return h.waitStart(r, d, "its token's byte budget")
}

// waitStart waits d before r starts, for what (its rate, its bytes); it
// reports false, with the 503's message, when r ends or the server starts
// shutting down first.
func (h *Handler) waitStart(r *http.Request, d time.Duration, what string) (string, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return "503 request ended while waiting for " + what, false
	case <-h.drain.Done(): // it has not started: the drain need not wait for it
		return "503 server shutting down", false
	case <-t.C:
		return "", true
	}
}

// refuseBytes answers 429: token id's request would wait longer than
// maxBytesWait for its bytes.
func (h *Handler) refuseBytes(w http.ResponseWriter, r *http.Request, id int64, wait time.Duration) {
	rate := int64(h.opts.TokenBytesRate)
	h.metrics.bytesRefused(r.URL.Path)
	if rec, ok := r.Context().Value(recKey{}).(*accessRecord); ok {
		rec.refused = fmt.Sprintf("token %d has sent its share of request bytes (%d a second)", id, rate)
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(min(wait, time.Hour).Seconds()))))
	http.Error(w, fmt.Sprintf("429 too many request bytes for this token (%d a second, %d at once); retry after the Retry-After seconds", rate, h.opts.TokenBytesBurst), http.StatusTooManyRequests)
}

// bytesBudgetError is what a body of no announced length fails to read
// with when token id's byte budget would make its reads wait longer than
// maxBytesWait in all; wait is the wait it was refused.
type bytesBudgetError struct {
	id   int64
	wait time.Duration
}

func (e *bytesBudgetError) Error() string {
	return fmt.Sprintf("request body: token %d has sent its share of request bytes (retry in %v)", e.id, e.wait.Round(time.Second))
}

// errBytesWaitEnded is what a body of no announced length fails to read
// with when its request ends, or the server starts shutting down, while
// a read waits for the token's byte budget.
var errBytesWaitEnded = errors.New("request body: wait for the token's byte budget ended")

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
// charge a token's byte budget. A read past the budget waits for the
// debt it made before it returns, so such a body is read at the budget's
// pace however many of them the token sends side by side; a read that
// would make the body's waits pass maxBytesWait fails with a
// *bytesBudgetError, and one whose request ends or whose server shuts down
// while it waits fails with that error.
type chargedBody struct {
	io.ReadCloser
	h      *Handler
	r      *http.Request
	id     int64
	waited time.Duration
}

// chargedRead is the most a chargedBody reads at once, so that no read
// runs far ahead of the budget.
const chargedRead = 64 << 10

func (c *chargedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p[:min(len(p), chargedRead)])
	if n <= 0 {
		return n, err
	}
	h := c.h
	rate, burst := h.opts.TokenBytesRate, float64(h.opts.TokenBytesBurst)
	now := time.Now()
	h.mu.Lock()
	b := h.byteBucket(c.id, now)
	b.ChargeN(now, float64(n), rate, burst)
	wait := b.WaitFor(now, 0, rate, burst) // until the debt is paid
	h.mu.Unlock()
	if wait <= 0 {
		return n, err
	}
	if c.waited += wait; c.waited > maxBytesWait {
		return n, &bytesBudgetError{id: c.id, wait: wait}
	}
	h.metrics.bytesWaited(c.r.URL.Path)
	if msg, ok := h.waitBytes(c.r, wait); !ok {
		return n, fmt.Errorf("%w: %s", errBytesWaitEnded, msg)
	}
	return n, err
}
