package abuse

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/coder/websocket"
	"github.com/fxamacker/cbor/v2"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/syncrepo"
)

// Sizes are the attacks' sizes. Bench is the full size; tests run
// smaller ones, and a sized attack's bounds scale with it (see
// Result.Violations).
type Sizes struct {
	Chars      int           // characters one /sync change inserts into the 5,000-character block
	ListItems  int           // items of one change's new list
	MapKeys    int           // keys of one change's new map
	Depth      int           // maps nested in one change
	Changes    int           // one-character changes in one sync message
	Conns      int           // connections of one token in the "many" attacks
	BatchCalls int           // tools/list calls in one JSON-RPC batch
	Huge       int64         // bytes of the oversized frame and body
	Slow       time.Duration // how long the slow attacks dribble their bytes
}

// Bench is the full size of every attack.
// The map's keys and the small changes are as many as fit one frame
// under the server's default 4 MiB cap.
var Bench = Sizes{Chars: 1_000_000, ListItems: 1_000_000, MapKeys: 350_000, Depth: 10_000, Changes: 25_000,
	Conns: 20, BatchCalls: 60_000, Huge: 64 << 20, Slow: 3 * time.Second}

// Attack is one abuse of the server, measured by Harness.Run.
type Attack struct {
	Key      string // a short name for a subtest: sync-insert, mcp-batch-2025-03-26, ...
	Name     string
	Requests int     // requests, frames or connections it sends
	Scale    float64 // its size as a fraction of its Bench size; 1 when unsized
	prepare  func(ctx context.Context, h *Harness) (prepared, error)
}

// errNoAnswer is what an attack's fire returns when the server never
// answered it.
var errNoAnswer = errors.New("no answer")

// prepared is an attack ready to fire: its payload made and its
// connections open.
type prepared struct {
	fire    func(ctx context.Context) (outcome string, err error)
	cleanup func()
	bytes   int64
	sent    *atomic.Int64 // when set, the requests fire sent (for an attack that sends for a time)
}

func ratio(n, full int) float64 {
	if full <= 0 {
		return 1
	}
	return min(1, float64(n)/float64(full))
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// atCap is the characters of the largest edit the server accepts by
// default (its cap counts a change's operations, references and changes
// together, so a little under it).
const atCap = syncrepo.DefaultMaxMessageOps * 99 / 100

// Attacks are the attacks at sizes s, in the order they run.
func Attacks(s Sizes) []Attack {
	chars := ratio(s.Chars, Bench.Chars)
	return []Attack{
		{Key: "sync-insert", Name: fmt.Sprintf("sync: one change inserting %s chars into a %s-char block", thousands(s.Chars), thousands(AttackerLimit)), Requests: 1, Scale: chars,
			prepare: syncAttack(false, 1, func(doc *automerge.Doc) error { return insertText(doc, s.Chars) })},
		{Key: "sync-insert-readonly", Name: fmt.Sprintf("sync: the same %s chars from a read-only token", thousands(s.Chars)), Requests: 1, Scale: chars,
			prepare: syncAttack(true, 1, func(doc *automerge.Doc) error { return insertText(doc, s.Chars) })},
		{Key: "sync-list", Name: fmt.Sprintf("sync: one change of a %s-item list", thousands(s.ListItems)), Requests: 1, Scale: ratio(s.ListItems, Bench.ListItems),
			prepare: syncAttack(false, 1, func(doc *automerge.Doc) error { return bigList(doc, s.ListItems) })},
		{Key: "sync-map", Name: fmt.Sprintf("sync: one change of a %s-key map", thousands(s.MapKeys)), Requests: 1, Scale: ratio(s.MapKeys, Bench.MapKeys),
			prepare: syncAttack(false, 1, func(doc *automerge.Doc) error { return bigMap(doc, s.MapKeys) })},
		{Key: "sync-deep", Name: fmt.Sprintf("sync: one change of maps nested %s deep", thousands(s.Depth)), Requests: 1, Scale: ratio(s.Depth, Bench.Depth),
			prepare: syncAttack(false, 1, func(doc *automerge.Doc) error { return deepMap(doc, s.Depth) })},
		{Key: "sync-small-changes", Name: fmt.Sprintf("sync: %s one-char changes in one message", thousands(s.Changes)), Requests: 1, Scale: ratio(s.Changes, Bench.Changes),
			prepare: smallChanges(s.Changes)},
		{Key: "sync-insert-wide", Name: fmt.Sprintf("sync: one change inserting %s chars into a %s-char block", thousands(s.Chars), thousands(blocks.MaxCharLimit)), Requests: 1, Scale: chars,
			prepare: wideInsert(s.Chars)},
		{Key: "mcp-insert-wide", Name: fmt.Sprintf("mcp: one block_append of %s chars to a %s-char block", thousands(s.Chars), thousands(blocks.MaxCharLimit)), Requests: 1, Scale: chars,
			prepare: mcpOne(wideAppend(s.Chars))},
		{Key: "sync-edit-at-cap", Name: fmt.Sprintf("sync: one change inserting %s chars (within the server's edit cap) into a %s-char block", thousands(atCap), thousands(blocks.MaxCharLimit)), Requests: 1, Scale: 1,
			prepare: wideInsert(atCap)},
		{Key: "mcp-edit-at-cap", Name: fmt.Sprintf("mcp: one block_append of %s chars (within the server's edit cap) to a %s-char block", thousands(atCap), thousands(blocks.MaxCharLimit)), Requests: 1, Scale: 1,
			prepare: mcpOne(wideAppend(atCap))},
		{Key: "sync-missing-dependency", Name: fmt.Sprintf("sync: a %s-char change whose dependency is missing", thousands(s.Chars)), Requests: 1, Scale: chars,
			prepare: missingDependency(s.Chars)},
		{Key: "sync-inflate", Name: fmt.Sprintf("sync: one compressed change inflating to %d MiB of zeros", bombBytes()>>20), Requests: 1, Scale: 1,
			prepare: deflateBomb},
		{Key: "sync-many-connections", Name: fmt.Sprintf("sync: %d connections of one token, %s chars each", s.Conns, thousands(s.Chars)), Requests: s.Conns, Scale: chars,
			prepare: syncAttack(false, s.Conns, func(doc *automerge.Doc) error { return insertText(doc, s.Chars) })},
		{Key: "mcp-batch-2025-06-18", Name: fmt.Sprintf("mcp: a batch of %s tools/list, protocol 2025-06-18", thousands(s.BatchCalls)), Requests: 1, Scale: ratio(s.BatchCalls, Bench.BatchCalls),
			prepare: batch("2025-06-18", s.BatchCalls)},
		{Key: "mcp-batch-2025-03-26", Name: fmt.Sprintf("mcp: a batch of %s tools/list, protocol 2025-03-26", thousands(s.BatchCalls)), Requests: 1, Scale: ratio(s.BatchCalls, Bench.BatchCalls),
			prepare: batch("2025-03-26", s.BatchCalls)},
		{Key: "mcp-read-nul-uri", Name: `mcp: resources/read of "engram://x/y\u0000"`, Requests: 1, Scale: 1,
			prepare: mcpOne(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"engram://x/y\u0000"}}`)},
		{Key: "sync-huge-frame", Name: fmt.Sprintf("sync: one frame of %d MiB (over the cap)", s.Huge>>20), Requests: 1, Scale: 1,
			prepare: hugeFrame(s.Huge)},
		{Key: "mcp-huge-body", Name: fmt.Sprintf("mcp: one body of %d MiB (over the cap)", s.Huge>>20), Requests: 1, Scale: 1,
			prepare: hugeBody(s.Huge)},
		{Key: "sync-slow-frames", Name: fmt.Sprintf("sync: %d connections dribbling a frame for %v", s.Conns, s.Slow), Requests: s.Conns, Scale: 1,
			prepare: slowFrames(s.Conns, s.Slow)},
		{Key: "mcp-slow-bodies", Name: fmt.Sprintf("mcp: %d requests dribbling their bodies for %v", s.Conns, s.Slow), Requests: s.Conns, Scale: 1,
			prepare: slowBodies(s.Conns, s.Slow)},
		{Key: "mcp-many-searches", Name: fmt.Sprintf("mcp: %d sessions of one token searching back to back for %v, half with 3 MiB queries", searchSessions(s), s.Slow), Requests: searchSessions(s), Scale: 1,
			prepare: manySearches(searchSessions(s), s.Slow)},
		{Key: "mcp-retry-flood", Name: fmt.Sprintf("mcp: %d sessions of one token sending 16 KiB notifications back to back for %v, each 429 retried after 20 ms", floodSessions(s), s.Slow), Requests: floodSessions(s), Scale: 1,
			prepare: retryFlood(floodSessions(s), s.Slow)},
	}
}

// --- /sync ---

// edit makes changes on a copy of the attacker's block's document.
type edit func(doc *automerge.Doc) error

// changes returns the changes f makes on the attacker's document, each
// committed by f or at the end.
func (h *Harness) changes(f edit) ([][]byte, error) {
	return changesOn(h.saved, f)
}

// changesOn returns the changes f makes on a copy of the saved document.
func changesOn(saved []byte, f edit) ([][]byte, error) {
	doc, err := automerge.Load(saved)
	if err != nil {
		return nil, err
	}
	heads := doc.Heads()
	if err := f(doc); err != nil {
		return nil, err
	}
	if _, err := doc.Commit("abuse"); err != nil && !strings.Contains(err.Error(), "empty") {
		return nil, err // "Commit is empty": f committed everything itself
	}
	cs, err := doc.Changes(heads...)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(cs))
	for i, c := range cs {
		out[i] = c.Save()
	}
	return out, nil
}

func insertText(doc *automerge.Doc, n int) error {
	v, err := doc.Path("content").Get()
	if err != nil {
		return err
	}
	t := v.Text()
	s := strings.Repeat("abcdefghijklmnopqrstuvwxyz", n/26+1)[:n]
	return t.Insert(t.Len(), s)
}

func bigList(doc *automerge.Doc, n int) error {
	l := automerge.NewList()
	if err := doc.RootMap().Set("items", l); err != nil {
		return err
	}
	vals := make([]any, 0, 4096)
	for i := 0; i < n; i += len(vals) {
		vals = vals[:0]
		for j := i; j < min(n, i+4096); j++ {
			vals = append(vals, int64(j))
		}
		if err := l.Append(vals...); err != nil {
			return err
		}
	}
	return nil
}

func bigMap(doc *automerge.Doc, n int) error {
	m := automerge.NewMap()
	if err := doc.RootMap().Set("keys", m); err != nil {
		return err
	}
	for i := range n {
		if err := m.Set("k"+strconv.Itoa(i), int64(i)); err != nil {
			return err
		}
	}
	return nil
}

func deepMap(doc *automerge.Doc, depth int) error {
	m := doc.RootMap()
	for range depth {
		c := automerge.NewMap()
		if err := m.Set("n", c); err != nil {
			return err
		}
		m = c
	}
	return m.Set("leaf", "x")
}

// rawSync is a v1 sync message (automerge's encoding: 0x42, heads, needs,
// haves, changes) carrying exactly changes, as a hostile peer can send it.
func rawSync(changes [][]byte) []byte {
	b := []byte{0x42, 0, 0, 0}
	b = binary.AppendUvarint(b, uint64(len(changes)))
	for _, c := range changes {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b
}

// wideInsert sends one change inserting n characters into the attacker's
// block of the largest character limit: an edit the block allows.
func wideInsert(n int) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		changes, err := changesOn(h.wideSaved, func(doc *automerge.Doc) error { return insertText(doc, n) })
		if err != nil {
			return prepared{}, fmt.Errorf("abuse: make the changes: %w", err)
		}
		return h.sendFramesTo(ctx, h.wideID, false, 1, changes)
	}
}

// wideAppend is a tools/call appending n characters to the attacker's
// block of the largest character limit.
func wideAppend(n int) string {
	text := strings.Repeat("abcdefghijklmnopqrstuvwxyz", n/26+1)[:n]
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block_append","arguments":{"label":%q,"text":%q}}}`, AttackerWideLabel, text)
}

// dialSync opens /sync with secret and joins.
func (h *Harness) dialSync(ctx context.Context, secret string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(h.server().base, "http") + "/sync?token=" + secret
	c, resp, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		status := ""
		if resp != nil {
			status = " (" + resp.Status + ")"
		}
		return nil, fmt.Errorf("abuse: dial /sync%s: %w", status, err)
	}
	c.SetReadLimit(256 << 20)
	join, _ := syncrepo.EncodeMessage(syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "abuse", SupportedProtocolVersions: []string{syncrepo.ProtocolVersion}})
	if err := c.Write(ctx, websocket.MessageBinary, join); err != nil {
		c.CloseNow()
		return nil, fmt.Errorf("abuse: join /sync: %w", err)
	}
	if _, b, err := c.Read(ctx); err != nil {
		c.CloseNow()
		return nil, fmt.Errorf("abuse: join /sync: %w", err)
	} else if m, err := syncrepo.DecodeMessage(b); err != nil || m.Type != syncrepo.TypePeer {
		c.CloseNow()
		return nil, fmt.Errorf("abuse: join /sync answered %q: %v", m.Type, err)
	}
	return c, nil
}

// answer reads c's frames until the server answers the attack: a refusal,
// doc-unavailable, an error or the connection's end; a sync message is
// noted and reading goes on for a second (a refusal may follow it). It
// reports whether the server answered at all.
func answer(ctx context.Context, c *websocket.Conn) (string, bool) {
	s := readAnswer(ctx, c)
	return s, s != noAnswer
}

const noAnswer = "no answer before the timeout"

func readAnswer(ctx context.Context, c *websocket.Conn) string {
	var synced bool
	for {
		rctx := ctx
		if synced {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(ctx, time.Second)
			defer cancel()
		}
		_, b, err := c.Read(rctx)
		if err != nil {
			if synced && ctx.Err() == nil {
				return "synced (accepted)"
			}
			if st := websocket.CloseStatus(err); st != -1 {
				return "closed " + st.String()
			}
			if ctx.Err() != nil {
				return noAnswer
			}
			return "connection ended: " + err.Error()
		}
		m, err := syncrepo.DecodeMessage(b)
		if err != nil {
			return "undecodable answer: " + err.Error()
		}
		switch m.Type {
		case syncrepo.TypeEphemeral:
			return "refused: " + refusalText(m.Data)
		case syncrepo.TypeDocUnavailable:
			return "doc-unavailable"
		case syncrepo.TypeError:
			return "error: " + m.Message
		case syncrepo.TypeSync:
			synced = true
		}
	}
}

func refusalText(data []byte) string {
	var r syncrepo.Refusal
	if err := cbor.Unmarshal(data, &r); err != nil {
		return "an undecodable refusal: " + err.Error()
	}
	return short(r.Error, 160)
}

func short(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// syncAttack sends, on each of conns connections (of the read-only token
// when readOnly), one sync frame carrying the changes f makes.
func syncAttack(readOnly bool, conns int, f edit) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		changes, err := h.changes(f)
		if err != nil {
			return prepared{}, fmt.Errorf("abuse: make the changes: %w", err)
		}
		return h.sendFrames(ctx, readOnly, conns, changes)
	}
}

func (h *Harness) sendFrames(ctx context.Context, readOnly bool, conns int, changes [][]byte) (prepared, error) {
	return h.sendFramesTo(ctx, h.docID, readOnly, conns, changes)
}

// sendFramesTo is sendFrames to the document docID.
func (h *Harness) sendFramesTo(ctx context.Context, docID string, readOnly bool, conns int, changes [][]byte) (prepared, error) {
	frame, err := syncrepo.EncodeMessage(syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "abuse", DocumentID: docID, Data: rawSync(changes)})
	if err != nil {
		return prepared{}, err
	}
	secret := h.attacker
	if readOnly {
		secret = h.readOnly
	}
	var cs []*websocket.Conn
	cleanup := func() {
		for _, c := range cs {
			c.CloseNow()
		}
	}
	for range conns {
		c, err := h.dialSync(ctx, secret)
		if err != nil {
			cleanup()
			return prepared{}, err
		}
		cs = append(cs, c)
	}
	return prepared{bytes: int64(len(frame) * conns), cleanup: cleanup, fire: func(ctx context.Context) (string, error) {
		outcomes := make([]string, len(cs))
		var silent atomic.Bool
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Go(func() {
				if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
					outcomes[i] = "write failed: " + err.Error()
					return
				}
				var ok bool
				if outcomes[i], ok = answer(ctx, c); !ok {
					silent.Store(true)
				}
			})
		}
		wg.Wait()
		if silent.Load() {
			return summarize(outcomes), errNoAnswer
		}
		return summarize(outcomes), nil
	}}, nil
}

// summarize joins outcomes, counting repeats.
func summarize(outcomes []string) string {
	n := map[string]int{}
	var order []string
	for _, o := range outcomes {
		if n[o] == 0 {
			order = append(order, o)
		}
		n[o]++
	}
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = o
		if len(outcomes) > 1 {
			parts[i] = fmt.Sprintf("%d× %s", n[o], o)
		}
	}
	return strings.Join(parts, "; ")
}

// smallChanges sends n one-character changes in one message, fewer if n
// would not fit a frame under the server's default 4 MiB cap.
func smallChanges(n int) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		var changes [][]byte
		changes, err := h.changes(func(doc *automerge.Doc) error {
			v, err := doc.Path("content").Get()
			if err != nil {
				return err
			}
			for range n {
				if err := v.Text().Append("x"); err != nil {
					return err
				}
				if _, err := doc.Commit("abuse"); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return prepared{}, fmt.Errorf("abuse: make the changes: %w", err)
		}
		total := 0
		for i, c := range changes {
			if total += len(c) + 8; total > 4<<20-4096 {
				changes = changes[:i]
				break
			}
		}
		return h.sendFrames(ctx, false, 1, changes)
	}
}

// missingDependency sends a change inserting n characters without the
// one-character change it depends on.
func missingDependency(n int) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		changes, err := h.changes(func(doc *automerge.Doc) error {
			v, err := doc.Path("content").Get()
			if err != nil {
				return err
			}
			if err := v.Text().Append("x"); err != nil {
				return err
			}
			if _, err := doc.Commit("withheld"); err != nil {
				return err
			}
			return insertText(doc, n)
		})
		if err != nil {
			return prepared{}, fmt.Errorf("abuse: make the changes: %w", err)
		}
		if len(changes) != 2 {
			return prepared{}, fmt.Errorf("abuse: %d changes, want 2", len(changes))
		}
		return h.sendFrames(ctx, false, 1, changes[1:])
	}
}

// bombBytes is what the compressed change of deflateBomb inflates to:
// a MiB less than a change to a block of the largest character limit may
// inflate to (blocks.MergeLimits), so that the server inflates it all
// before it finds it is no change.
func bombBytes() int64 { return blocks.MergeLimits(blocks.MaxCharLimit).Bytes - 1<<20 }

// deflated is n zero bytes compressed with DEFLATE.
func deflated(n int64) []byte {
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestCompression)
	io.Copy(w, io.LimitReader(zeros{}, n))
	w.Close()
	return b.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// deflateBomb sends, to the attacker's wide block, one change chunk of
// the compressed kind (type 2) whose DEFLATE data inflates to
// bombBytes of zeros: a frame of about 64 KB that the server must
// inflate before it can measure the change.
func deflateBomb(ctx context.Context, h *Harness) (prepared, error) {
	body := deflated(bombBytes())
	chunk := append([]byte{0x85, 0x6f, 0x4a, 0x83, 0, 0, 0, 0, 2}, binary.AppendUvarint(nil, uint64(len(body)))...)
	return h.sendFramesTo(ctx, h.wideID, false, 1, [][]byte{append(chunk, body...)})
}

// hugeFrame sends one WebSocket message of n bytes.
func hugeFrame(n int64) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		c, err := h.dialSync(ctx, h.attacker)
		if err != nil {
			return prepared{}, err
		}
		payload := bytes.Repeat([]byte{0xa0}, int(n))
		return prepared{bytes: n, cleanup: func() { c.CloseNow() }, fire: func(ctx context.Context) (string, error) {
			werr := c.Write(ctx, websocket.MessageBinary, payload)
			out, ok := answer(ctx, c)
			if werr != nil {
				out += " (the write failed: " + short(werr.Error(), 80) + ")"
			}
			if !ok {
				return out, errNoAnswer
			}
			return out, nil
		}}, nil
	}
}

// slowFrames opens conns connections and on each writes one message a
// kilobyte every 100 ms for d, never finishing it.
func slowFrames(conns int, d time.Duration) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		var cs []*websocket.Conn
		cleanup := func() {
			for _, c := range cs {
				c.CloseNow()
			}
		}
		for range conns {
			c, err := h.dialSync(ctx, h.attacker)
			if err != nil {
				cleanup()
				return prepared{}, err
			}
			cs = append(cs, c)
		}
		chunk := bytes.Repeat([]byte{0xa0}, 1024)
		return prepared{cleanup: cleanup, bytes: int64(conns) * int64(d/(100*time.Millisecond)) * 1024, fire: func(ctx context.Context) (string, error) {
			outcomes := make([]string, len(cs))
			var wg sync.WaitGroup
			for i, c := range cs {
				wg.Go(func() {
					w, err := c.Writer(ctx, websocket.MessageBinary)
					if err != nil {
						outcomes[i] = "writer: " + err.Error()
						return
					}
					for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
						if _, err := w.Write(chunk); err != nil {
							outcomes[i] = "cut off: " + short(err.Error(), 80)
							return
						}
					}
					outcomes[i] = "still open after " + d.String()
				})
			}
			wg.Wait()
			return summarize(outcomes), nil
		}}, nil
	}
}

// --- /mcp ---

// rawSession is an MCP session over plain HTTP requests, for what the
// go-sdk client would not send.
type rawSession struct {
	base, token, version, id string
	client                   *http.Client
}

// openRaw initializes a session of the attacker's token under protocol
// version.
func (h *Harness) openRaw(ctx context.Context, version string) (*rawSession, error) {
	s := &rawSession{base: h.server().base, token: h.attacker, version: version, client: &http.Client{}}
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"abuse","version":"0"}}}`, version)
	status, body, hdr, err := s.post(ctx, strings.NewReader(init), nil)
	if err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("abuse: initialize: %d %v %s", status, err, short(body, 200))
	}
	s.id = hdr.Get("Mcp-Session-Id")
	if s.id == "" {
		return nil, errors.New("abuse: initialize: no Mcp-Session-Id")
	}
	if status, body, _, err := s.post(ctx, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil); err != nil || status != http.StatusAccepted {
		return nil, fmt.Errorf("abuse: notifications/initialized: %d %v %s", status, err, short(body, 200))
	}
	return s, nil
}

// close ends the session (DELETE /mcp), so the token's sessions do not
// pile up across attacks.
func (s *rawSession) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.base+"/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", s.version)
	if resp, err := s.client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// post sends one POST /mcp and reads its whole answer, returning its
// first 300 bytes (and counting the rest into n when set).
func (s *rawSession) post(ctx context.Context, body io.Reader, n *int64) (int, string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/mcp", body)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", s.version)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	head := make([]byte, 300)
	k, _ := io.ReadFull(resp.Body, head)
	rest, err := io.Copy(io.Discard, resp.Body)
	if n != nil {
		*n = int64(k) + rest
	}
	return resp.StatusCode, string(head[:k]), resp.Header, err
}

// batch sends one JSON-RPC batch of n tools/list calls on a session of
// protocol version.
func batch(version string, n int) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		s, err := h.openRaw(ctx, version)
		if err != nil {
			return prepared{}, err
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i+1)
		}
		b.WriteByte(']')
		body := b.Bytes()
		return prepared{bytes: int64(len(body)), cleanup: s.close, fire: func(ctx context.Context) (string, error) {
			var got int64
			status, head, _, err := s.post(ctx, bytes.NewReader(body), &got)
			out := fmt.Sprintf("HTTP %d, %.1f MiB answered", status, mib(got))
			if status != http.StatusOK {
				out += ": " + short(head, 100)
			}
			return out, err
		}}, nil
	}
}

// mcpOne sends one JSON-RPC message on a session.
func mcpOne(msg string) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		s, err := h.openRaw(ctx, "2025-06-18")
		if err != nil {
			return prepared{}, err
		}
		return prepared{bytes: int64(len(msg)), cleanup: s.close, fire: func(ctx context.Context) (string, error) {
			status, head, _, err := s.post(ctx, strings.NewReader(msg), nil)
			out := fmt.Sprintf("HTTP %d: %q", status, short(head, 160))
			if err == nil && !strings.Contains(head, `"id":1`) {
				return out + ", no JSON-RPC response to the call", errNoAnswer
			}
			return out, err
		}}, nil
	}
}

// hugeBody posts n bytes to a session.
func hugeBody(n int64) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		s, err := h.openRaw(ctx, "2025-06-18")
		if err != nil {
			return prepared{}, err
		}
		return prepared{bytes: n, cleanup: s.close, fire: func(ctx context.Context) (string, error) {
			body := io.MultiReader(strings.NewReader(`[`), io.LimitReader(repeatReader(' '), n-1))
			status, head, _, err := s.post(ctx, body, nil)
			if err != nil && status == 0 {
				return "request failed: " + short(err.Error(), 100), nil
			}
			return fmt.Sprintf("HTTP %d: %s", status, short(head, 100)), nil
		}}, nil
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// slowBodies posts n requests on a session, each body a byte every
// 100 ms for d, then cut off.
func slowBodies(n int, d time.Duration) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		s, err := h.openRaw(ctx, "2025-06-18")
		if err != nil {
			return prepared{}, err
		}
		return prepared{bytes: int64(n) * int64(d/(100*time.Millisecond)), cleanup: s.close, fire: func(ctx context.Context) (string, error) {
			outcomes := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					pr, pw := io.Pipe()
					done := make(chan struct{})
					go func() {
						defer close(done)
						status, head, _, err := s.post(ctx, pr, nil)
						switch {
						case err != nil && status == 0:
							outcomes[i] = "request failed: " + short(err.Error(), 80)
						default:
							outcomes[i] = fmt.Sprintf("HTTP %d: %s", status, short(head, 60))
						}
					}()
					pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}`))
					for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
						if _, err := pw.Write([]byte(" ")); err != nil {
							break
						}
					}
					pw.CloseWithError(errors.New("the attacker stopped sending"))
					<-done
				})
			}
			wg.Wait()
			return summarize(outcomes), nil
		}}, nil
	}
}

// searchSessions is how many sessions manySearches opens: Conns, and at
// least 8 (more than a token's turns on a machine of up to 16 cores).
func searchSessions(s Sizes) int { return max(s.Conns, 8) }

// manySearches opens n sessions of the attacker's token and has each
// call archival_search back to back for d: half with a query of 3 MiB of
// distinct words (under the 4 MiB body cap; each costs the server about
// a tenth of a second of CPU, most of it reading the JSON), half with a
// small query.
func manySearches(n int, d time.Duration) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		ss := make([]*rawSession, 0, n)
		for range n {
			s, err := h.openRaw(ctx, "2025-06-18")
			if err != nil {
				for _, s := range ss {
					s.close()
				}
				return prepared{}, err
			}
			ss = append(ss, s)
		}
		var q strings.Builder
		for i := 0; q.Len() < 3<<20; i++ {
			fmt.Fprintf(&q, "w%dq%d ", i, i*7)
		}
		call := func(query string) []byte {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
				"params": map[string]any{"name": "archival_search", "arguments": map[string]any{"query": query, "mode": "fts", "limit": 50}}})
			return b
		}
		big, small := call(q.String()), call("notes harbour wx1")
		sent := &atomic.Int64{}
		cleanup := func() {
			for _, s := range ss {
				s.close()
			}
		}
		return prepared{bytes: int64(n/2) * int64(len(big)), sent: sent, cleanup: cleanup, fire: func(ctx context.Context) (string, error) {
			outcomes := make([]string, n)
			codes := make([]map[int]int, n)
			end := time.Now().Add(d)
			var wg sync.WaitGroup
			for i, s := range ss {
				body := small
				if i%2 == 0 {
					body = big
				}
				codes[i] = map[int]int{}
				wg.Go(func() {
					for time.Now().Before(end) && ctx.Err() == nil {
						sent.Add(1)
						status, _, _, err := s.post(ctx, bytes.NewReader(body), nil)
						if err != nil && status == 0 {
							outcomes[i] = "request failed: " + short(err.Error(), 80)
							return
						}
						codes[i][status]++
						if status == http.StatusTooManyRequests {
							time.Sleep(50 * time.Millisecond)
						}
					}
					var parts []string
					for _, c := range []int{http.StatusOK, http.StatusTooManyRequests} {
						if codes[i][c] > 0 {
							parts = append(parts, fmt.Sprintf("%d× HTTP %d", codes[i][c], c))
						}
					}
					outcomes[i] = strings.Join(parts, ", ")
				})
			}
			wg.Wait()
			return summarize(outcomes), nil
		}}, nil
	}
}

func floodSessions(s Sizes) int { return max(4*s.Conns, 16) }

// retryFlood opens n sessions of the attacker's token (pacing itself to
// the token's rate as it opens them) and has each send a 16 KiB
// notification back to back for d, retrying each 429 after 20 ms instead
// of after its Retry-After, as a careless or hostile client does: every
// request costs the server its parsing and its answer, refused or not.
func retryFlood(n int, d time.Duration) func(context.Context, *Harness) (prepared, error) {
	return func(ctx context.Context, h *Harness) (prepared, error) {
		ss := make([]*rawSession, n)
		for i := range ss {
			var err error
			for try := 0; ; try++ {
				if ss[i], err = h.openRaw(ctx, "2025-06-18"); err == nil || try == 50 || ctx.Err() != nil {
					break
				}
				time.Sleep(100 * time.Millisecond) // past the token's rate: wait for it
			}
			if err != nil {
				for _, s := range ss[:i] {
					s.close()
				}
				return prepared{}, err
			}
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": 999, "reason": strings.Repeat("x", 16<<10)}})
		sent := &atomic.Int64{}
		cleanup := func() {
			for _, s := range ss {
				s.close()
			}
		}
		return prepared{bytes: int64(len(body)), sent: sent, cleanup: cleanup, fire: func(ctx context.Context) (string, error) {
			var (
				mu     sync.Mutex
				codes  = map[int]int{}
				failed string
			)
			end := time.Now().Add(d)
			var wg sync.WaitGroup
			for _, s := range ss {
				wg.Go(func() {
					for time.Now().Before(end) && ctx.Err() == nil {
						sent.Add(1)
						status, _, _, err := s.post(ctx, bytes.NewReader(body), nil)
						mu.Lock()
						if err != nil && status == 0 {
							failed = "; a request failed: " + short(err.Error(), 80)
							mu.Unlock()
							return
						}
						codes[status]++
						mu.Unlock()
						if status == http.StatusTooManyRequests {
							time.Sleep(20 * time.Millisecond)
						}
					}
				})
			}
			wg.Wait()
			var parts []string
			for _, c := range slices.Sorted(maps.Keys(codes)) {
				parts = append(parts, fmt.Sprintf("%d× HTTP %d", codes[c], c))
			}
			return strings.Join(parts, ", ") + failed, nil
		}}, nil
	}
}
