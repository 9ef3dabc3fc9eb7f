package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// wsConn is a WebSocket as syncrepo.Conn: its messages are frames.
// automerge-repo sends only binary ones; a text message is a frame too, so
// that it counts against the connection's rate like any other (the
// session answers it with an error, as it does any bytes that are not a
// message) rather than being read and dropped for free.
//
// A frame's body is read in a turn of the connection's token (turn, when
// set; the session takes another to handle it): the token's connections
// then read their frames one share of the cores at a time, and hold one
// share's frames in memory, however many of them send at once.
type wsConn struct {
	c       *websocket.Conn
	turn    func(ctx context.Context) (release func(), err error)
	timeout time.Duration // FrameReadTimeout, but in tests
	bodies  *bodyPieces   // the Handler's: a frame's length is not known ahead
}

// Read waits for a frame without ctx: the library closes the connection,
// without a close frame, when a read's context ends, and serveSync wants
// to close it with a status saying why (revoked token, shutdown). Closing
// ends the read. ctx ends the wait for a turn, and so does
// FrameReadTimeout (errTurnTimeout): the connection reads nothing while
// it waits, so a peer gone meanwhile would otherwise hold its place (and
// count against its token's connections) for as long as the token is
// busy. Once in its turn, the frame's body has FrameReadTimeout to
// arrive, or the connection is closed: a peer dribbling a frame would
// hold its token's turn.
func (w wsConn) Read(ctx context.Context) ([]byte, error) {
	rctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, r, err := w.c.Reader(rctx)
	if err != nil {
		return nil, err
	}
	if w.turn != nil {
		tctx, stop := context.WithTimeout(ctx, w.timeout)
		release, err := w.turn(tctx)
		stop()
		if err != nil {
			if ctx.Err() == nil {
				return nil, errTurnTimeout
			}
			return nil, err
		}
		defer release()
	}
	// The library ends a payload read, closing the connection, when the
	// reader's context ends; the header's wait above had none.
	t := time.AfterFunc(w.timeout, cancel)
	defer t.Stop()
	return w.bodies.readAll(r)
}

// FrameReadTimeout is how long a /sync frame may wait for its token's
// turn, and then how long its body may take to arrive, as BodyReadTimeout
// is an MCP body's.
const FrameReadTimeout = BodyReadTimeout

func (w wsConn) Write(ctx context.Context, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return w.c.Write(ctx, websocket.MessageBinary, frame)
}

// stampShare is the sync store with BlocksStamp shared by the /sync
// connections of one agent: each reads the stamp at every change the store
// signals (syncrepo.Notifier) and every poll period, and on PostgreSQL a
// stamp is a query, so n peers of an agent cost one query per signal or
// period instead of n. A read is shared while no signal came since it
// began and it is younger than every: the connections one signal wakes
// all get the one read that started after it, never an older one.
type stampShare struct {
	src   stampSource
	every time.Duration
	mu    sync.Mutex
	memo  map[string]*stampRead
}

// stampRead is one agent's stamp read, done once done is closed.
type stampRead struct {
	at     time.Time
	signal <-chan struct{} // the store's BlocksChanged when the read began (nil: none)
	done   chan struct{}
	stamp  memory.BlocksStamp
	err    error
}

// stampSource reads one agent's stamp (storeStamps over a store); a
// source that is a syncrepo.Notifier signals its changes.
type stampSource interface {
	BlocksStamp(ctx context.Context, agent string) (memory.BlocksStamp, error)
}

// storeStamps reads stamps through the store's agent handles.
type storeStamps struct{ SyncStore }

func (s storeStamps) BlocksStamp(ctx context.Context, agent string) (memory.BlocksStamp, error) {
	return s.Agent(agent).BlocksStamp(ctx)
}

// sharedStamps is an agent's handle whose stamp reads go through a
// stampShare: what a /sync session serves.
type sharedStamps struct {
	*memory.Agent
	share *stampShare
}

func (a sharedStamps) BlocksStamp(ctx context.Context) (memory.BlocksStamp, error) {
	return a.share.BlocksStamp(ctx, a.ID())
}

var (
	_ syncrepo.Notifier = (*stampShare)(nil)
	_ syncrepo.Agent    = sharedStamps{}
)

// BlocksChanged is the store's, or nil (never closes) when it signals
// nothing.
func (s *stampShare) BlocksChanged() <-chan struct{} {
	if n, ok := s.src.(syncrepo.Notifier); ok {
		return n.BlocksChanged()
	}
	return nil
}

func (s *stampShare) BlocksStamp(ctx context.Context, agent string) (memory.BlocksStamp, error) {
	// Taken before the read: a change racing with it closes this channel,
	// and the next caller reads again.
	signal := s.BlocksChanged()
	now := time.Now()
	s.mu.Lock()
	r, ok := s.memo[agent]
	if ok && r.signal == signal && now.Sub(r.at) < s.every {
		s.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return memory.BlocksStamp{}, ctx.Err()
		}
		if r.err == nil {
			return r.stamp, nil
		}
		// The reader's error (its context ended, say): read anew.
		return s.src.BlocksStamp(ctx, agent)
	}
	if len(s.memo) > 4096 {
		clear(s.memo) // agents come and go; the memo is only a saving
	}
	r = &stampRead{at: now, signal: signal, done: make(chan struct{})}
	s.memo[agent] = r
	s.mu.Unlock()
	r.stamp, r.err = s.src.BlocksStamp(ctx, agent)
	close(r.done)
	if r.err != nil {
		s.mu.Lock()
		if s.memo[agent] == r {
			delete(s.memo, agent)
		}
		s.mu.Unlock()
	}
	return r.stamp, r.err
}

// syncToken is the token of a /sync request: ?token= (browsers cannot
// set headers on a WebSocket) or Authorization: Bearer.
func syncToken(r *http.Request) string {
	if t := r.URL.Query().Get("token"); t != "" {
		return t
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// serveSync upgrades an agent's request to the automerge-repo protocol
// over a WebSocket. The token's agent decides what the peer reads and
// writes; the connection closes when the token is revoked or expires, or
// the door shuts down.
func (h *Handler) serveSync(w http.ResponseWriter, r *http.Request) {
	if h.opts.SyncStore == nil {
		http.NotFound(w, r)
		return
	}
	rec := r.Context().Value(recKey{}).(*accessRecord)
	secret := syncToken(r)
	if !h.admit(w, r, secret) {
		return
	}
	t, err := h.opts.Tokens.Verify(r.Context(), secret)
	switch {
	case errors.Is(err, accesstoken.ErrInvalid), errors.Is(err, accesstoken.ErrExpired), errors.Is(err, accesstoken.ErrRevoked):
		h.authFailed(r, secret, err.Error())
		w.Header().Set("WWW-Authenticate", `Bearer realm="engram"`)
		http.Error(w, "401 unauthorized: the token is missing, unknown, expired or revoked", http.StatusUnauthorized)
		return
	case err != nil:
		h.log.Error("serve: verify token", "err", err)
		http.Error(w, "internal error checking the token", http.StatusInternalServerError)
		return
	case t.Agent == "":
		rec.refused = fmt.Sprintf("token %d is a human's (web UI), not an agent's", t.ID)
		http.Error(w, "403 forbidden: a human's token opens the web UI, not /sync", http.StatusForbidden)
		return
	}
	h.authSucceeded(r, secret)
	rec.token = &t
	// Past its cap a connection is refused once the token's rate lets it
	// in (at once while its burst lasts, paced after), as a new MCP
	// session past its cap is: a client retrying each refusal at once is
	// held to its rate.
	if ok, waited := h.allow(w, r, t.ID); !ok || waited && !h.stillValid(w, r, secret) {
		return
	}
	h.mu.Lock()
	full := h.syncsBy[t.ID] >= h.opts.SyncMaxTokenConnections
	var budget *syncrepo.Budget
	if !full {
		h.syncsBy[t.ID]++
		budget = h.syncBudget(t.ID)
	}
	h.mu.Unlock()
	if full {
		rec.refused = fmt.Sprintf("token %d has %d /sync connections open", t.ID, h.opts.SyncMaxTokenConnections)
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("503 too many /sync connections for this token (%d open); close one or retry later", h.opts.SyncMaxTokenConnections), http.StatusServiceUnavailable)
		return
	}
	defer func() {
		h.mu.Lock()
		if h.syncsBy[t.ID]--; h.syncsBy[t.ID] <= 0 {
			delete(h.syncsBy, t.ID)
			if b := h.budgets[t.ID]; b != nil {
				b.idleSince = time.Now()
			}
		}
		h.mu.Unlock()
	}()
	// The Origin rule ran in ServeHTTP (same host or Options.Origins), so
	// the library's own same-host check would only refuse configured
	// origins.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	c.SetReadLimit(h.opts.SyncMaxMessageBytes)
	ctx, cancel := context.WithCancelCause(h.ctx)
	defer cancel(nil)
	id := h.syncConns.Add(1)
	h.mu.Lock()
	h.syncs[id] = cancel
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.syncs, id)
		h.mu.Unlock()
	}()
	go h.watchToken(ctx, cancel, t.ID)
	// A token's frames take the turns its MCP requests take.
	turn := func(ctx context.Context) (func(), error) {
		return h.turns.frameTurn(ctx, t.ID, func() { h.metrics.turnWaited(r.URL.Path) })
	}
	err = syncrepo.Serve(ctx, wsConn{c: c, turn: turn, timeout: h.frameTimeout, bodies: &h.bodies}, sharedStamps{Agent: h.opts.SyncStore.Agent(t.Agent), share: h.syncStore}, &syncrepo.Options{
		ReadOnly: t.ReadOnly, MaxDocuments: h.opts.SyncMaxDocuments, Rate: h.opts.SyncRate, Burst: h.opts.SyncBurst, Logger: h.log,
		Mirrors: h.mirrors, Budget: budget, Notifier: h.syncStore, Turn: turn, MaxMessageOps: h.opts.MaxEdit})
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTokenGone):
		c.Close(websocket.StatusPolicyViolation, "token revoked or expired")
	case errors.Is(cause, errShutdown), h.ctx.Err() != nil:
		c.Close(websocket.StatusGoingAway, "server shutting down")
	case errors.Is(err, syncrepo.ErrStore):
		// The peer's changes were not written, nor refused: it sends them
		// again when it reconnects.
		h.log.Error("serve: sync", "agent", t.Agent, "err", err)
		c.Close(websocket.StatusInternalError, "store error; reconnect")
	case errors.Is(err, errTurnTimeout):
		c.Close(websocket.StatusTryAgainLater, "waited too long for the token's turn; reconnect")
	case errors.Is(err, syncrepo.ErrProtocol):
		c.Close(websocket.StatusPolicyViolation, "protocol error")
	case websocket.CloseStatus(err) == websocket.StatusMessageTooBig:
		// the library closed it already
	default:
		c.Close(websocket.StatusNormalClosure, "")
	}
}

// tokenBudget is a token's syncrepo.Budget and, once its last /sync
// connection closed, since when it has none.
type tokenBudget struct {
	*syncrepo.Budget
	idleSince time.Time
}

// syncBudget returns the budget token id's /sync connections share. A
// budget outlives its connections until its operations would have refilled
// (closing and reopening connections gives no fresh burst); those idle
// longer are dropped here. Caller holds mu.
func (h *Handler) syncBudget(id int64) *syncrepo.Budget {
	now := time.Now()
	refill := time.Second + time.Duration(float64(h.opts.SyncOpsBurst)/h.opts.SyncOpsRate*float64(time.Second))
	for k, b := range h.budgets {
		if h.syncsBy[k] == 0 && !b.idleSince.IsZero() && now.Sub(b.idleSince) > refill && k != id {
			delete(h.budgets, k)
		}
	}
	b := h.budgets[id]
	if b == nil {
		b = &tokenBudget{Budget: syncrepo.NewBudget(h.opts.SyncOpsRate, h.opts.SyncOpsBurst, h.opts.SyncMaxTokenHeldBytes)}
		h.budgets[id] = b
	}
	b.idleSince = time.Time{}
	return b.Budget
}

var (
	errTokenGone = errors.New("token revoked or expired")
	errShutdown  = errors.New("shutting down")
)

// watchToken ends a sync connection once its token is revoked or expires.
func (h *Handler) watchToken(ctx context.Context, cancel context.CancelCauseFunc, id int64) {
	tick := time.NewTicker(h.opts.SyncTokenCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t, err := h.opts.Tokens.Get(ctx, id)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			continue // the store is busy or down: the next check decides
		}
		if err != nil || !tokenValid(t, time.Now()) {
			cancel(errTokenGone)
			return
		}
	}
}

// SyncConnections is the number of open /sync connections.
func (h *Handler) SyncConnections() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.syncs)
}
