package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// change is one live event: the agents whose view of memory changed.
// ready (not sent as data) marks the event that tells a new stream the
// watch loop has a baseline, so any later change reaches it.
type change struct {
	Agents []string `json:"agents"`
	ready  bool
}

// hub fans changes out to the open event streams.
type hub struct {
	mu    sync.Mutex
	subs  map[chan change]bool // → the stream was told it is ready
	nudge chan struct{}
}

func newHub() *hub {
	return &hub{subs: map[chan change]bool{}, nudge: make(chan struct{}, 1)}
}

func (h *hub) subscribe() chan change {
	ch := make(chan change, 16)
	h.mu.Lock()
	h.subs[ch] = false
	h.mu.Unlock()
	h.poke()
	return ch
}

// ready tells every stream not yet told that a baseline exists.
func (h *hub) ready() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch, told := range h.subs {
		if !told {
			select {
			case ch <- change{ready: true}:
				h.subs[ch] = true
			default:
			}
		}
	}
}

func (h *hub) unsubscribe(ch chan change) {
	h.mu.Lock()
	delete(h.subs, ch)
	h.mu.Unlock()
}

func (h *hub) listeners() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

func (h *hub) publish(c change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- c:
		default: // a stalled stream misses an event, not the whole hub
		}
	}
}

// poke makes the watch loop look now instead of at its next tick.
func (h *hub) poke() {
	select {
	case h.nudge <- struct{}{}:
	default:
	}
}

// watch is the live loop. While an event stream is open it compares a
// fingerprint of each agent's memory with the last one it saw, at every
// tick and whenever poked. The fingerprint reads the database, so it sees
// writes from other processes (the multi-process catch-up the store does
// on its next read); document subscriptions and the server's own writes
// poke it so that changes made in this process show at once.
func (s *Server) watch() {
	defer close(s.done)
	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	var last map[string]string
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.live.nudge:
		}
		if s.live.listeners() == 0 {
			last = nil // a new stream starts from a fresh baseline
			continue
		}
		now, err := s.fingerprints(s.ctx)
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Warn("ui: live check", "err", err)
			}
			continue
		}
		if last != nil {
			var c change
			for a, fp := range now {
				if last[a] != fp {
					c.Agents = append(c.Agents, a)
				}
			}
			for a := range last {
				if _, ok := now[a]; !ok {
					c.Agents = append(c.Agents, a)
				}
			}
			if len(c.Agents) > 0 {
				s.live.publish(c)
			}
		}
		last = now
		// Streams that joined before this check now compare against it.
		s.live.ready()
	}
}

// fingerprints reads, per agent, what its pages show: the blocks stamp
// (content, metadata and sharing of its own and shared blocks), the
// proposals on its blocks and its newest message. That is 2+2N queries
// for N agents (see Options.PollInterval).
func (s *Server) fingerprints(ctx context.Context) (map[string]string, error) {
	agents, err := s.agents(ctx)
	if err != nil {
		return nil, err
	}
	proposals, err := s.proposalCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(agents))
	for _, a := range agents {
		st, err := s.store.Agent(a).BlocksStamp(ctx)
		if err != nil {
			return nil, err
		}
		msgs, err := s.store.Agent(a).Messages().List(ctx, &memory.MessageQuery{Limit: 1, Newest: true})
		if err != nil {
			return nil, err
		}
		var newest int64
		if len(msgs) > 0 {
			newest = msgs[0].ID
		}
		out[a] = fmt.Sprintf("%v/%s/%d", st, proposals[a], newest)
	}
	return out, nil
}

// subscribe follows a document this server opened, so that a write to it
// in this process (by an agent sharing the store) pokes the live loop.
func (s *Server) subscribe(owner, label string, doc *blocks.Document) {
	k := owner + "\x00" + label
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if _, ok := s.subs[k]; ok || s.ctx.Err() != nil {
		return
	}
	s.subs[k] = doc.Subscribe(func(blocks.Event) { s.live.poke() })
}

// handleEvents streams changes as server-sent events named "change".
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	// A stream lives as long as the page: no write deadline applies, and
	// the read deadline (HTTPServer's ReadTimeout, against slow request
	// bodies) must not cancel it either.
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead { // the headers are the whole answer: no stream to hold open
		return
	}
	ch := s.live.subscribe()
	defer s.live.unsubscribe(ch)
	fmt.Fprint(w, "retry: 2000\n: connected\n\n")
	if err := rc.Flush(); err != nil {
		return
	}
	keepalive := time.NewTicker(25 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-keepalive.C:
			fmt.Fprint(w, ": keepalive\n\n")
		case c := <-ch:
			if c.ready {
				fmt.Fprint(w, "event: ready\ndata: {}\n\n")
				break
			}
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", b)
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
