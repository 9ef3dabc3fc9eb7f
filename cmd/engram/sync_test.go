package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/syncrepo"
)

// jsRepo drives testdata/syncpeer/peer.mjs: automerge-repo 2.x Repos with
// the stock WebSocketClientAdapter, one per peer name.
type jsRepo struct {
	t     *testing.T
	stdin io.Writer
	mu    sync.Mutex
	next  int
	wait  map[int]chan map[string]any
}

func startJSRepo(t *testing.T) *jsRepo {
	t.Helper()
	node, dir := testenv.NodePackage(t, filepath.Join("testdata", "syncpeer"), "package.json", "package-lock.json", "peer.mjs")
	cmd := exec.Command(node, "peer.mjs")
	cmd.Dir = dir
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("peer stderr:\n%s", stderr.String())
		}
	})
	j := &jsRepo{t: t, stdin: stdin, wait: map[int]chan map[string]any{}}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<24)
	if !lines.Scan() {
		t.Fatalf("peer did not start: %s", stderr.String())
	}
	go func() {
		for lines.Scan() {
			var m map[string]any
			if json.Unmarshal(lines.Bytes(), &m) != nil {
				continue
			}
			id := int(m["id"].(float64))
			j.mu.Lock()
			ch := j.wait[id]
			j.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}()
	return j
}

func (j *jsRepo) do(c map[string]any) map[string]any {
	j.t.Helper()
	j.mu.Lock()
	j.next++
	id := j.next
	ch := make(chan map[string]any, 1)
	j.wait[id] = ch
	j.mu.Unlock()
	c["id"] = id
	b, _ := json.Marshal(c)
	if _, err := j.stdin.Write(append(b, '\n')); err != nil {
		j.t.Fatal(err)
	}
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		j.t.Fatalf("peer did not answer %s", b)
		return nil
	}
}

func content(m map[string]any) string {
	v, _ := m["value"].(map[string]any)
	s, _ := v["content"].(string)
	return s
}

// waitStore polls a block's rendering until it contains want.
func waitStore(t *testing.T, store *memory.Store, agent, label, want string) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 5*time.Second {
		r, err := store.Agent(agent).Block(label).Render(context.Background())
		if err == nil && strings.Contains(r, want) {
			return time.Since(start)
		}
		time.Sleep(2 * time.Millisecond)
	}
	r, _ := store.Agent(agent).Block(label).Render(context.Background())
	t.Fatalf("block %s/%s never showed %q: %q", agent, label, want, r)
	return 0
}

// Unmodified automerge-repo peers against engram serve's /sync.
func TestSyncAutomergeRepoPeer(t *testing.T) {
	js := startJSRepo(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sync.db")
	store := openServeStoreAt(t, path)
	specs := []memory.BlockSpec{
		{Label: "notes", Value: "hello\n"},
		{Label: "private", Value: "secret\n"},
		{Label: "frozen", Value: "fixed\n", Permission: blocks.ReadOnly},
		{Label: "small", Value: "tiny\n", CharLimit: 40},
		{Label: "profile", Schema: schema.Map{Fields: []schema.FieldDef{{Name: "name", Type: schema.FieldString}, {Name: "locked", Type: schema.FieldString, ReadOnly: true}, {Name: "note", Type: schema.FieldText}}},
			Value: map[string]any{"name": "ada", "locked": "L", "note": ""}},
	}
	urls := map[string]string{}
	for _, s := range specs {
		if _, err := store.Agent("ada").CreateBlock(ctx, s); err != nil {
			t.Fatal(err)
		}
		id, err := store.Agent("ada").Block(s.Label).DocumentID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		urls[s.Label] = syncrepo.URL(id)
	}
	f := startServe(t, store, &serve.Options{SyncTokenCheck: 100 * time.Millisecond})
	ws := "ws" + strings.TrimPrefix(f.url, "http") + "/sync?token="
	_, ada := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	_, adaRO := newToken(t, store, accesstoken.Spec{Agent: "ada", ReadOnly: true})
	_, bob := newToken(t, store, accesstoken.Spec{Agent: "bob"})

	// (1) find a block by its URL and read it.
	got := js.do(map[string]any{"op": "find", "peer": "ada", "ws": ws + ada, "url": urls["notes"]})
	if content(got) != "hello\n" {
		t.Fatalf("find: %v", got)
	}
	// (2) a peer's append reaches the store, attributed to the token's agent.
	before, _ := store.Agent("ada").Block("notes").History(ctx)
	js.do(map[string]any{"op": "splice", "peer": "ada", "ws": ws + ada, "url": urls["notes"], "path": []string{"content"}, "text": "from js\n"})
	waitStore(t, store, "ada", "notes", "from js\n")
	after, _ := store.Agent("ada").Block("notes").History(ctx)
	if len(after) != len(before)+1 {
		t.Errorf("history after the peer's append: %+v", after[len(before):])
	}
	// The automerge change is the JS peer's own (no engram commit
	// message); the history names the token's agent, which merged it, as
	// does the update row that persisted it.
	if c := after[len(after)-1]; c.Actor != "ada" || c.Op != blocks.OpMerge {
		t.Errorf("the peer's change in the history: %s/%s, want ada/merge (the token's agent)", c.Actor, c.Op)
	}
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var actor string
	if err := db.QueryRow(`SELECT u.actor FROM block_updates u JOIN blocks b ON b.id = u.block_id
		WHERE b.owner = 'ada' AND b.label = 'notes' ORDER BY u.seq DESC LIMIT 1`).Scan(&actor); err != nil || actor != "ada" {
		t.Errorf("the peer's update row is attributed to %q (%v), want ada", actor, err)
	}
	// (3) a Go-side append reaches the peer.
	if err := store.Agent("ada").Block("notes").Append(ctx, "from go\n"); err != nil {
		t.Fatal(err)
	}
	got = js.do(map[string]any{"op": "wait", "peer": "ada", "ws": ws + ada, "url": urls["notes"], "field": "content", "contains": "from go\n"})
	if got["error"] != nil || content(got) != "hello\nfrom js\nfrom go\n" {
		t.Fatalf("Go append on the peer: %v", got)
	}

	// (4) refused edits persist nothing and the peer converges back.
	for _, tc := range []struct {
		name, peer, token, label, text string
	}{
		{"read-only block", "ada", ada, "frozen", "changed\n"},
		{"read-only token", "ro", adaRO, "notes", "via a read-only token\n"},
		{"over the limit", "ada", ada, "small", strings.Repeat("x", 100)},
		{"NUL byte", "ada", ada, "notes", "nul\x00\n"},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			want, _ := store.Agent("ada").Block(tc.label).Render(ctx)
			hist, _ := store.Agent("ada").Block(tc.label).History(ctx)
			js.do(map[string]any{"op": "find", "peer": tc.peer, "ws": ws + tc.token, "url": urls[tc.label]})
			got := js.do(map[string]any{"op": "splice", "peer": tc.peer, "ws": ws + tc.token, "url": urls[tc.label], "path": []string{"content"}, "text": tc.text})
			if !strings.Contains(content(got), tc.text) {
				t.Fatalf("the peer's own edit: %v", got)
			}
			got = js.do(map[string]any{"op": "wait", "peer": tc.peer, "ws": ws + tc.token, "url": urls[tc.label], "field": "content", "equals": want})
			if got["error"] != nil {
				t.Fatalf("the peer did not converge back to %q: %v", want, got)
			}
			if r, _ := got["refusals"].([]any); len(r) == 0 {
				t.Errorf("no refusal notice: %v", got)
			}
			time.Sleep(200 * time.Millisecond)
			if r, _ := store.Agent("ada").Block(tc.label).Render(ctx); r != want {
				t.Errorf("store: %q, want %q", r, want)
			}
			if h, _ := store.Agent("ada").Block(tc.label).History(ctx); len(h) != len(hist) {
				t.Errorf("history grew by %d rows", len(h)-len(hist))
			}
		})
	}
	// Refused map edits: a read-only field, a value of the wrong kind, a
	// key the schema does not lay out. Setting a field back overrides the
	// refused value, so the refused change and its counter-change are
	// persisted at once (two history entries, no value change: see
	// syncrepo's session.absorb); removing a key the edit added is not.
	for _, tc := range []struct {
		name, label string
		path        []string
		value       any
		was         string
		persisted   int
	}{
		{"read-only field", "profile", []string{"fields", "locked"}, "hacked", "L", 2},
		{"schema-breaking value", "profile", []string{"fields", "name"}, 42, "ada", 2},
		{"unknown root key", "notes", []string{"bogus"}, "x", "", 0},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			want, _ := store.Agent("ada").Block(tc.label).Render(ctx)
			hist, _ := store.Agent("ada").Block(tc.label).History(ctx)
			js.do(map[string]any{"op": "set", "peer": "ada", "ws": ws + ada, "url": urls[tc.label], "path": tc.path, "value": tc.value})
			got := js.do(map[string]any{"op": "wait", "peer": "ada", "ws": ws + ada, "url": urls[tc.label], "path": tc.path, "equals": tc.was})
			if got["error"] != nil {
				t.Fatalf("the peer did not converge back to %q: %v", tc.was, got)
			}
			time.Sleep(200 * time.Millisecond)
			if r, _ := store.Agent("ada").Block(tc.label).Render(ctx); r != want {
				t.Errorf("store: %q, want %q", r, want)
			}
			if h, _ := store.Agent("ada").Block(tc.label).History(ctx); len(h) != len(hist)+tc.persisted {
				t.Errorf("history grew by %d rows, want %d", len(h)-len(hist), tc.persisted)
			}
		})
	}
	// A Go write to the field after its refused edit survives the peer's
	// next good edit (the counter-change, persisted, cannot win over it).
	if err := store.Agent("ada").Block("profile").Apply(ctx, memory.Edit{Op: blocks.OpSetField, Field: "name", Value: "ada2"}); err != nil {
		t.Fatal(err)
	}
	if got := js.do(map[string]any{"op": "wait", "peer": "ada", "ws": ws + ada, "url": urls["profile"], "path": []string{"fields", "name"}, "equals": "ada2"}); got["error"] != nil {
		t.Fatalf("the Go write did not reach the peer: %v", got)
	}
	// (automerge JS makes a plain string a text object: a schema's string
	// field needs ImmutableString; a text field takes splices.)
	js.do(map[string]any{"op": "splice", "peer": "ada", "ws": ws + ada, "url": urls["profile"], "path": []string{"fields", "note"}, "pos": 0, "text": "good"})
	waitStore(t, store, "ada", "profile", "good")
	if r, _ := store.Agent("ada").Block("profile").Render(ctx); !strings.Contains(r, "ada2") {
		t.Errorf("the Go write was lost to a counter-change: %q", r)
	}

	// A good edit after a refusal still merges (it carries the refused
	// change and its counter-change: the value is the good edit's).
	js.do(map[string]any{"op": "splice", "peer": "ada", "ws": ws + ada, "url": urls["notes"], "path": []string{"content"}, "text": "after\n"})
	waitStore(t, store, "ada", "notes", "after\n")
	if r, _ := store.Agent("ada").Block("notes").Render(ctx); strings.Contains(r, "nul") {
		t.Errorf("a refused edit came back with a later good one: %q", r)
	}

	// Propagation each way (docs/sync.md): JS edit → store rendering, Go
	// append → JS document.
	var toStore, toPeer []time.Duration
	for i := range 20 {
		start := time.Now()
		js.do(map[string]any{"op": "splice", "peer": "ada", "ws": ws + ada, "url": urls["notes"], "path": []string{"content"}, "text": fmt.Sprintf("js %d\n", i)})
		waitStore(t, store, "ada", "notes", fmt.Sprintf("js %d\n", i))
		toStore = append(toStore, time.Since(start))
		start = time.Now()
		store.Agent("ada").Block("notes").Append(ctx, fmt.Sprintf("go %d\n", i))
		js.do(map[string]any{"op": "wait", "peer": "ada", "ws": ws + ada, "url": urls["notes"], "field": "content", "contains": fmt.Sprintf("go %d\n", i)})
		toPeer = append(toPeer, time.Since(start))
	}
	pct := func(d []time.Duration, p int) time.Duration {
		slices.Sort(d)
		return d[(len(d)-1)*p/100]
	}
	t.Logf("propagation over 20 edits: JS→store p50 %v p95 %v; Go→JS p50 %v p95 %v",
		pct(toStore, 50), pct(toStore, 95), pct(toPeer, 50), pct(toPeer, 95))

	// First sync of a 10000-character block: what two automerge JS peers
	// (sync format v2) exchange, beside TestSyncMeasure's v1 figure.
	text := strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ. ", 160)[:10000]
	blk, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "big", Value: text, CharLimit: 20000})
	if err != nil {
		t.Fatal(err)
	}
	big, err := blk.Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	saved, _ := big.Save()
	got = js.do(map[string]any{"op": "firstsync", "doc": base64.StdEncoding.EncodeToString(saved)})
	if got["same"] != true {
		t.Fatalf("JS first sync: %v", got)
	}
	t.Logf("first sync of a 10000-character block between automerge JS peers (v2): %v bytes in %v rounds", got["bytes"], got["rounds"])

	// (5) another agent gets doc-unavailable, as for a made-up id.
	for _, u := range []string{urls["private"], syncrepo.URL(memory.DocumentID{9, 9, 9})} {
		got = js.do(map[string]any{"op": "find", "peer": "bob", "ws": ws + bob, "url": u})
		if e, _ := got["error"].(string); !strings.Contains(e, "unavailable") {
			t.Errorf("bob found %s: %v", u, got)
		}
	}
}

// Two JS peers and two Go writers append to one block at once: every
// line arrives everywhere, the same value on both peers and in the store;
// on PostgreSQL each peer and writer on its own serve process and store.
func TestSyncConcurrentPeersConverge(t *testing.T) {
	js := startJSRepo(t)
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			var stores []*memory.Store
			if engine == "sqlite" {
				s := openServeStore(t)
				stores = []*memory.Store{s, s}
			} else {
				dsn := pgtest.Start(t).NewDatabase(t)
				stores = []*memory.Store{openServeStoreAt(t, dsn), openServeStoreAt(t, dsn)}
			}
			if _, err := stores[0].Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start\n"}); err != nil {
				t.Fatal(err)
			}
			id, _ := stores[0].Agent("ada").Block("notes").DocumentID(ctx)
			url := syncrepo.URL(id)
			_, tok := newToken(t, stores[0], accesstoken.Spec{Agent: "ada"})
			var ws []string
			for _, s := range stores {
				ws = append(ws, "ws"+strings.TrimPrefix(startServe(t, s, nil).url, "http")+"/sync?token="+tok)
			}
			peers := []string{engine + "-p1", engine + "-p2"}
			for i, p := range peers {
				if got := js.do(map[string]any{"op": "find", "peer": p, "ws": ws[i], "url": url}); content(got) != "start\n" {
					t.Fatalf("find: %v", got)
				}
			}
			const n = 10
			var wg sync.WaitGroup
			var want []string
			for i, w := range []string{"g1", "g2"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range n {
						if err := stores[i].Agent("ada").Block("notes").Append(ctx, fmt.Sprintf("%s-%d\n", w, k)); err != nil {
							t.Error(err)
						}
					}
				}()
				for k := range n {
					want = append(want, fmt.Sprintf("%s-%d", w, k))
				}
			}
			for i, p := range peers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range n {
						js.do(map[string]any{"op": "splice", "peer": p, "ws": ws[i], "url": url, "path": []string{"content"}, "text": fmt.Sprintf("p%d-%d\n", i, k)})
					}
				}()
				for k := range n {
					want = append(want, fmt.Sprintf("p%d-%d", i, k))
				}
			}
			wg.Wait()
			// Wait until both stores and both peers hold the same value.
			var values []string
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				r1, _ := stores[0].Agent("ada").Block("notes").Render(ctx)
				r2, _ := stores[1].Agent("ada").Block("notes").Render(ctx)
				p1 := content(js.do(map[string]any{"op": "find", "peer": peers[0], "ws": ws[0], "url": url}))
				p2 := content(js.do(map[string]any{"op": "find", "peer": peers[1], "ws": ws[1], "url": url}))
				values = []string{r1, r2, p1, p2}
				if (r1 == r2 && r1 == p1 && p1 == p2 && strings.Count(r1, "\n") == len(want)+1) || time.Now().After(deadline) {
					break
				}
			}
			if values[0] != values[1] || values[1] != values[2] || values[2] != values[3] {
				t.Fatalf("not converged:\nstore 1 %q\nstore 2 %q\np1 %q\np2 %q", values[0], values[1], values[2], values[3])
			}
			lines := strings.Split(strings.TrimSpace(values[0]), "\n")
			sort.Strings(lines)
			for _, w := range want {
				if _, ok := sort.Find(len(lines), func(i int) int { return strings.Compare(w, lines[i]) }); !ok {
					t.Errorf("line %q lost: %q", w, values[0])
				}
			}
		})
	}
}
