package memory_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

// The store's guarantees under failures and concurrency: a failed persist
// is reported and not served, merges from elsewhere are judged, torn rows
// are reported, limits hold across caches, and the others below.

func text(t *testing.T, c *memory.Store, agent, label string) string {
	t.Helper()
	doc, err := c.Agent(agent).Block(label).Doc(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s, err := doc.Text()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// holdWriteLock takes the database's write lock from another connection
// until the returned function is called: every write of the store then
// fails to persist once its BusyTimeout passes.
func holdWriteLock(t testing.TB, path string) (release func()) {
	t.Helper()
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		db.Close()
	}
}

// A write whose persistence fails returns the error, through the
// store's methods and through a view's methods alike, and the cache serves
// the last durable state, never the lost change.
func TestFailedPersistIsReportedAndNotServed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locked.db")
	c := openFile(t, path, &memory.Options{BusyTimeout: 50 * time.Millisecond})
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "durable"}); err != nil {
		t.Fatal(err)
	}
	view, err := c.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriteLock(t, path)
	if err := c.Agent("ada").Block("notes").Append(ctx, " lost"); !errors.Is(err, memory.ErrPersist) {
		t.Fatalf("AppendToBlock with the database locked: err = %v, want ErrPersist", err)
	}
	if err := c.Agent("ada").Block("notes").SetText(ctx, "rewritten"); !errors.Is(err, memory.ErrPersist) {
		t.Fatalf("UpdateBlockText with the database locked: err = %v, want ErrPersist", err)
	}
	if err := view.AppendText(" lost too", blocks.Agent); !errors.Is(err, memory.ErrPersist) {
		t.Fatalf("view.AppendText with the database locked: err = %v, want ErrPersist", err)
	}
	if got, _ := view.Text(); got != "durable" {
		t.Fatalf("view after failed writes = %q, want the durable state", got)
	}
	if got := text(t, c, "ada", "notes"); got != "durable" {
		t.Fatalf("cache after failed writes = %q, want the durable state", got)
	}
	release()
	// The block works again, and only what was acknowledged is there.
	if err := view.AppendText(" then more", blocks.Agent); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2 := openFile(t, path, nil)
	if got := text(t, c2, "ada", "notes"); got != "durable then more" {
		t.Fatalf("after reopening = %q", got)
	}
}

// Items 3 and 4: external automerge changes merge through MergeChanges
// only; they are validated, persisted, indexed and attributed, and an
// invalid one is refused with the block kept as it was.
func TestMergeChangesFromElsewhere(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "merge.db")
	c := openFile(t, path, nil)
	// A peer (as automerge JS would) edits a copy of the document.
	doc, peer := blockAndPeer(t, c, memory.BlockSpec{Label: "notes", Value: "alpha", CharLimit: 100})
	if err := mustText(t, peer).Append(" zebracorn"); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Commit("from js"); err != nil {
		t.Fatal(err)
	}
	changes := peer.SaveIncremental()

	// The unsupported route fails loudly and changes nothing.
	if err := doc.LoadIncremental(changes); !errors.Is(err, blocks.ErrManaged) {
		t.Fatalf("LoadIncremental on a store's document: err = %v, want ErrManaged", err)
	}
	if err := c.Agent("ada").Block("notes").Merge(ctx, changes); err != nil {
		t.Fatal(err)
	}
	// A later store write persists too, and everything agrees.
	if err := c.Agent("ada").Block("notes").Append(ctx, " omega"); err != nil {
		t.Fatal(err)
	}
	want := "alpha zebracorn omega"
	if got := text(t, c, "ada", "notes"); got != want {
		t.Fatalf("after merge = %q", got)
	}
	c.Close()
	c = openFile(t, path, nil)
	if got := text(t, c, "ada", "notes"); got != want {
		t.Fatalf("after reopening = %q, want %q", got, want)
	}
	if r, _ := c.Agent("ada").Block("notes").Render(ctx); r != want {
		t.Fatalf("rendered = %q, want %q", r, want)
	}
	res, err := c.Agent("ada").Search(ctx, "zebracorn", search.NewOptions().Mode(search.FTS))
	if err != nil || len(res) != 1 {
		t.Fatalf("search after merge: %v, %v", res, err)
	}

	// An invalid peer change: content becomes a number.
	doc, _ = c.Agent("ada").Block("notes").Doc(ctx)
	saved, _ := doc.Save()
	bad, _ := automerge.Load(saved)
	if err := bad.RootMap().Set("content", 42); err != nil {
		t.Fatal(err)
	}
	bad.Commit("breaks the schema")
	if err := c.Agent("ada").Block("notes").Merge(ctx, bad.SaveIncremental()); !errors.Is(err, blocks.ErrCorrupt) && !errors.Is(err, schema.ErrInvalid) {
		t.Fatalf("schema-breaking merge: err = %v", err)
	}
	// Too long for the limit.
	long, _ := automerge.Load(saved)
	mustText(t, long).Append(strings.Repeat("x", 200))
	long.Commit("too long")
	if err := c.Agent("ada").Block("notes").Merge(ctx, long.SaveIncremental()); !errors.Is(err, blocks.ErrLimit) {
		t.Fatalf("over-limit merge: err = %v, want ErrLimit", err)
	}
	if err := c.Agent("ada").Block("notes").Merge(ctx, []byte("not automerge")); !errors.Is(err, blocks.ErrCorrupt) {
		t.Fatalf("garbage merge: err = %v, want ErrCorrupt", err)
	}
	if got := text(t, c, "ada", "notes"); got != want {
		t.Fatalf("after refused merges = %q, want %q", got, want)
	}
	if err := c.Agent("ada").Block("notes").Append(ctx, "!"); err != nil {
		t.Fatalf("write after refused merges: %v", err)
	}
	c.Close()
	c = openFile(t, path, nil)
	if got := text(t, c, "ada", "notes"); got != want+"!" {
		t.Fatalf("after reopening = %q", got)
	}
	// Attribution: the merge's row names the agent that merged.
	h, err := c.Agent("ada").Block("notes").History(ctx)
	if err != nil || len(h) < 3 {
		t.Fatalf("history: %v %v", h, err)
	}
}

// A torn update row is reported as ErrCorrupt naming the block,
// never skipped.
func TestTornUpdateRowIsReported(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "torn.db")
	c := openFile(t, path, nil)
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "journal", Value: "one"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{" two", " three"} {
		if err := c.Agent("ada").Block("journal").Append(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE block_updates SET data = substr(data, 1, length(data) / 2)
		WHERE seq = (SELECT max(seq) FROM block_updates)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	c = openFile(t, path, nil)
	_, err = c.Agent("ada").Block("journal").Doc(ctx)
	if !errors.Is(err, memory.ErrCorrupt) || !strings.Contains(err.Error(), `"journal"`) {
		t.Fatalf("GetBlock over a torn row: err = %v, want ErrCorrupt naming the block", err)
	}
	if err := c.Agent("ada").Block("journal").Append(ctx, " four"); !errors.Is(err, memory.ErrCorrupt) {
		t.Fatalf("write over a torn row: err = %v, want ErrCorrupt", err)
	}
}

// Limits hold across writers: two caches on one file (each with
// its own replica, warmed before the race) cannot together push a block
// past its character limit or a list past MaxItems.
func TestLimitsHoldAcrossCaches(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "limits.db")
	a := openFile(t, path, nil)
	b := openFile(t, path, nil)
	const blocksN = 10
	list := schema.List{MaxItems: 3}
	for i := 0; i < blocksN; i++ {
		if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: label("text", i), CharLimit: 1000}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: label("list", i), Schema: list, Value: []any{"x", "y"}}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []*memory.Store{a, b} { // warm both replicas
			c.Agent("ada").Block(label("text", i)).Doc(ctx)
			c.Agent("ada").Block(label("list", i)).Doc(ctx)
		}
	}
	chunk := strings.Repeat("z", 601)
	var wg sync.WaitGroup
	errs := make(chan error, 4*blocksN)
	for i := 0; i < blocksN; i++ {
		for _, c := range []*memory.Store{a, b} {
			wg.Add(2)
			go func() {
				defer wg.Done()
				errs <- c.Agent("ada").Block(label("text", i)).Append(ctx, chunk)
			}()
			go func() {
				defer wg.Done()
				errs <- c.Agent("ada").Block(label("list", i)).Apply(ctx, memory.Edit{Op: blocks.OpPushItem, Value: "z"})
			}()
		}
	}
	wg.Wait()
	close(errs)
	var ok, limit int
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, blocks.ErrLimit) || errors.Is(err, schema.ErrInvalid):
			limit++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 2*blocksN || limit != 2*blocksN {
		t.Fatalf("%d writes acknowledged and %d refused, want %d each", ok, limit, 2*blocksN)
	}
	a.Close()
	b.Close()
	c := openFile(t, path, nil)
	for i := 0; i < blocksN; i++ {
		if r, _ := c.Agent("ada").Block(label("text", i)).Render(ctx); len(r) != 601 {
			t.Errorf("block %d holds %d chars after two racing 601-char appends, want 601", i, len(r))
		}
		doc, err := c.Agent("ada").Block(label("list", i)).Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if items, _ := doc.Items(); len(items) != 3 {
			t.Errorf("list %d has %d items, MaxItems is 3", i, len(items))
		}
	}
}

// blockAndPeer creates ada's block spec in c and returns it with an
// external automerge peer holding a copy of its document.
func blockAndPeer(t *testing.T, c *memory.Store, spec memory.BlockSpec) (*blocks.Document, *automerge.Doc) {
	t.Helper()
	doc, err := createBlockDoc(context.Background(), c.Agent("ada"), spec)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	return doc, peer
}

func mustText(t *testing.T, d *automerge.Doc) *automerge.Text {
	t.Helper()
	v, err := d.RootMap().Get("content")
	if err != nil {
		t.Fatal(err)
	}
	return v.Text()
}

func label(kind string, i int) string { return kind + "_" + string(rune('a'+i)) }

// An Append permission only adds to counters; counters never wrap.
func TestCounterRules(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	m := schema.Map{Fields: []schema.FieldDef{{Name: "count", Type: schema.FieldCounter}}}
	if _, err := c.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: "stats", Schema: m, Value: map[string]any{"count": int64(10)}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("owner").Block("stats").Share(ctx, "guest", blocks.Append); err != nil {
		t.Fatal(err)
	}
	inc := func(agent string, d int64) error {
		return c.Agent(agent).Shared("owner", "stats").Apply(ctx, memory.Edit{Op: blocks.OpIncrementCounter, Field: "count", Delta: d})
	}
	if err := inc("guest", -10); !errors.Is(err, blocks.ErrPermission) {
		t.Fatalf("Append sharee decrementing: err = %v, want ErrPermission", err)
	}
	if err := inc("guest", 5); err != nil {
		t.Fatal(err)
	}
	if err := inc("owner", -15); err != nil {
		t.Fatalf("owner (ReadWrite) decrementing: %v", err)
	}
	if err := inc("owner", math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if err := inc("owner", 1); !errors.Is(err, schema.ErrInvalid) {
		t.Fatalf("overflowing increment: err = %v, want schema.ErrInvalid", err)
	}
	doc, _ := c.Agent("owner").Block("stats").Doc(ctx)
	if v, _ := doc.Field("count"); v != int64(math.MaxInt64) {
		t.Fatalf("count = %v after a refused overflow", v)
	}
}

// A Log-type block is append-only whatever its schema.
func TestLogTypeIsAppendOnly(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	doc, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "events", Type: blocks.Log})
	if err != nil {
		t.Fatal(err)
	}
	if k := doc.Schema().Kind(); k != schema.KindLog {
		t.Fatalf("a Log block created without a schema has a %s schema, want log", k)
	}
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "textlog", Type: blocks.Log, Schema: schema.Text{}, Value: "first"}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []memory.Edit{
		{Op: blocks.OpSetText, Text: "rewritten"},
		{Op: blocks.OpReplaceText, Old: "first", Text: "gone"},
		{Op: blocks.OpInsertText, Index: 0, Text: "injected"},
	} {
		if err := c.Agent("ada").Block("textlog").Apply(ctx, e); !errors.Is(err, blocks.ErrPermission) {
			t.Errorf("%s on a Log-type text block: err = %v, want ErrPermission", e.Op, err)
		}
	}
	if err := c.Agent("ada").Block("textlog").Append(ctx, " second"); err != nil {
		t.Fatal(err)
	}
	if r, _ := c.Agent("ada").Block("textlog").Render(ctx); r != "first second" {
		t.Fatalf("textlog = %q", r)
	}
}

// A view checks the current share and permission when it writes.
func TestStaleViewsFollowTheCurrentShare(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	if _, err := c.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: "board", Value: "start"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("owner").Block("board").Share(ctx, "guest", blocks.ReadWrite); err != nil {
		t.Fatal(err)
	}
	view, err := c.Agent("guest").Shared("owner", "board").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("owner").Block("board").Share(ctx, "guest", blocks.Append); err != nil {
		t.Fatal(err)
	}
	if err := view.SetText("taken over", blocks.Agent); !errors.Is(err, blocks.ErrPermission) {
		t.Fatalf("rewrite through a view taken before a downgrade to Append: err = %v", err)
	}
	if err := view.AppendText(" +guest", blocks.Agent); err != nil {
		t.Fatalf("append after a downgrade to Append: %v", err)
	}
	if err := c.Agent("owner").Block("board").Unshare(ctx, "guest"); err != nil {
		t.Fatal(err)
	}
	if err := view.AppendText(" after revoke", blocks.Agent); !errors.Is(err, blocks.ErrPermission) {
		t.Fatalf("write through a view taken before the share was revoked: err = %v", err)
	}
	if r, _ := c.Agent("owner").Block("board").Render(ctx); r != "start +guest" {
		t.Fatalf("board = %q", r)
	}
	// An upgrade takes effect for the old view too.
	if err := c.Agent("owner").Block("board").Share(ctx, "guest", blocks.ReadWrite); err != nil {
		t.Fatal(err)
	}
	if err := view.SetText("agreed", blocks.Agent); err != nil {
		t.Fatalf("rewrite after the share came back at ReadWrite: %v", err)
	}
}

// hangingEmbedder is a real OpenAI-compatible HTTP embedder whose server
// stops answering once hang is closed... until the test ends.
func hangingEmbedder(t *testing.T, dims int) (search.Embedder, func()) {
	t.Helper()
	var mu sync.Mutex
	hanging := false
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := hanging
		mu.Unlock()
		if h {
			select {
			case <-done:
			case <-r.Context().Done():
			}
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Data []item `json:"data"`
		}{}
		for i := range req.Input {
			v := make([]float32, dims)
			v[i%dims] = 1
			out.Data = append(out.Data, item{Index: i, Embedding: v})
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	emb, err := search.NewOpenAI(&search.OpenAIOptions{BaseURL: srv.URL, Model: "test", Dimensions: dims, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return emb, func() { mu.Lock(); hanging = true; mu.Unlock() }
}

// Writes do not wait for an embedder, a cancelled context returns
// at once, and Close does not hang on an embedder that does.
func TestWritesDoNotWaitForTheEmbedder(t *testing.T) {
	ctx := context.Background()
	emb, hang := hangingEmbedder(t, 8)
	path := filepath.Join(t.TempDir(), "emb.db")
	c, err := memory.Open(ctx, fresh(path), &memory.Options{Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "warm", Value: "before the embedder hangs"}); err != nil {
		t.Fatal(err)
	}
	hang()
	start := time.Now()
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "hello"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := c.Agent("ada").Block("notes").Append(ctx, " more"); err != nil {
			t.Fatal(err)
		}
	}
	// A write that waited for the embedder would wait out its 60 s
	// attempt timeout; 15 s leaves a loaded machine room.
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("writes took %v with a hanging embedder", d)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Agent("ada").Block("notes").Append(cancelled, " never"); !errors.Is(err, context.Canceled) {
		t.Fatalf("write with a cancelled context: err = %v", err)
	}
	// FTS sees the writes at once; vector search waits for the embedder
	// only as long as its own context allows.
	if res, err := c.Agent("ada").Search(ctx, "more", search.NewOptions().Mode(search.FTS)); err != nil || len(res) != 1 {
		t.Fatalf("FTS: %v %v", res, err)
	}
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	if _, err := c.Agent("ada").Search(short, "more", search.NewOptions().Mode(search.Vector)); err == nil {
		t.Fatal("vector search with a hanging embedder returned no error")
	}
	start = time.Now()
	c.Close()
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Close took %v with a hanging embedder", d)
	}
	c = openFile(t, path, nil)
	if r, _ := c.Agent("ada").Block("notes").Render(ctx); r != "hello more more more more more" {
		t.Fatalf("notes = %q", r)
	}
}

// A file that is not a database fails at once.
func TestOpenNotADatabaseFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("this is not a database\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	// With a minute's busy timeout, failing in under 20 s means Open did
	// not wait for a lock it can never get.
	start := time.Now()
	c, err := memory.Open(context.Background(), fresh(path), &memory.Options{BusyTimeout: time.Minute})
	if err == nil {
		c.Close()
		t.Fatal("opened a text file as a store")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("Open took %v to fail: %v", d, err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("error does not name the file: %v", err)
	}
}

// Labels are checked at creation, so the name in a
// block's tag is exactly its label and no two blocks look alike.
func TestLabelsAreCheckedAtCreation(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	for _, l := range []string{"skill:x", "my notes", "日本語", "tab\tlabel", "-x", strings.Repeat("x", 65)} {
		_, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: l})
		if !errors.Is(err, memory.ErrInvalidArgument) || !errors.Is(err, blocks.ErrInvalidLabel) {
			t.Errorf("CreateBlock(%q): err = %v, want ErrInvalidArgument and ErrInvalidLabel", l, err)
		}
	}
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "skill.x_1-b"}); err != nil {
		t.Fatal(err)
	}
}

// With WriteBack, a process reads its own writes before
// Flush: listings, RenderedContent and the stamp the builder caches under.
func TestWriteBackReadsItsOwnWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wb.db")
	c := openFile(t, path, &memory.Options{WriteBack: true})
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one"}); err != nil {
		t.Fatal(err)
	}
	before, err := c.Agent("ada").BlocksStamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("ada").Block("notes").Append(ctx, " two"); err != nil {
		t.Fatal(err)
	}
	after, _ := c.Agent("ada").BlocksStamp(ctx)
	if after == before {
		t.Fatal("BlocksStamp unchanged by a write-back edit: cached listings would be stale")
	}
	if r, _ := c.Agent("ada").Block("notes").Render(ctx); r != "one two" {
		t.Fatalf("RenderedContent before Flush = %q", r)
	}
	list, err := c.Agent("ada").Blocks(ctx)
	if err != nil || len(list) != 1 || list[0].Rendered != "one two" {
		t.Fatalf("ListBlocks before Flush = %+v, %v", list, err)
	}
	// Another process sees it only after Flush.
	other := openFile(t, path, nil)
	if r, _ := other.Agent("ada").Block("notes").Render(ctx); r != "one" {
		t.Fatalf("another Store sees %q before Flush", r)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := other.Agent("ada").Block("notes").Render(ctx); r != "one two" {
		t.Fatalf("another Store sees %q after Flush", r)
	}
}

// A block's limit is capped, with an error that says where big texts
// belong: a 10 MB text block would take over a minute to create, nearly
// all of it in automerge's text insert, which grows faster than linearly
// (see blocks.MaxCharLimit).
func TestCharLimitIsCapped(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	_, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "huge", CharLimit: blocks.MaxCharLimit + 1})
	if !errors.Is(err, memory.ErrInvalidArgument) || !strings.Contains(err.Error(), "archival") {
		t.Fatalf("CreateBlock over MaxCharLimit: err = %v", err)
	}
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "big", CharLimit: blocks.MaxCharLimit}); err != nil {
		t.Fatal(err)
	}
}

// A URL Open cannot serve is an error, never a path.
func TestOpenRefusesUnknownSchemes(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	for _, target := range []string{"mysql://u:secret@h/db", "s3://bucket/x"} {
		c, err := memory.Open(context.Background(), fresh(target), nil)
		if err == nil {
			c.Close()
			t.Fatalf("Open(%q) succeeded", target)
		}
		if !errors.Is(err, memory.ErrUnknownScheme) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): err = %v", target, err)
		}
	}
	// PostgreSQL URLs go to the PostgreSQL backend: no server here, so an
	// error that names the target without its password, and no file.
	for _, target := range []string{"postgres://u:secret@127.0.0.1:1/db", "postgresql://u:secret@/db?host=" + dir + "/nosocket"} {
		c, err := memory.Open(context.Background(), fresh(target), &memory.Options{BusyTimeout: time.Second})
		if err == nil {
			c.Close()
			t.Fatalf("Open(%q) succeeded", target)
		}
		if errors.Is(err, memory.ErrUnknownScheme) || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("Open(%q): err = %v", target, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Open of URLs created %v", entries)
	}
	c, err := memory.Open(context.Background(), fresh("sqlite://"+filepath.Join(dir, "x.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// An initial map value that leaves a field out keeps the
// field's default (a counter stays a counter at 0 or its default).
func TestInitialMapValueKeepsOmittedFields(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	m := schema.Map{Fields: []schema.FieldDef{
		{Name: "name", Type: schema.FieldString},
		{Name: "count", Type: schema.FieldCounter},
		{Name: "mode", Type: schema.FieldString, Default: "auto"},
	}}
	doc, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "stats", Schema: m, Value: map[string]any{"name": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Render(); !strings.Contains(got, "count: 0") || !strings.Contains(got, "mode: auto") || !strings.Contains(got, "name: x") {
		t.Fatalf("rendered:\n%s", got)
	}
	if err := c.Agent("ada").Block("stats").Apply(ctx, memory.Edit{Op: blocks.OpIncrementCounter, Field: "count", Delta: 2}); err != nil {
		t.Fatal(err)
	}
}

// A peer that keeps the block's document syncs every edit through
// MergeChanges: its later incremental saves hold changes that build on
// what the store has, not on what they carry; each is persisted (another
// process reads them all) and a save skipped in between is refused, with
// nothing kept.
func TestMergeChangesFromALongLivedPeer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "peer.db")
	c := openFile(t, path, nil)
	_, peer := blockAndPeer(t, c, memory.BlockSpec{Label: "notes", Value: "alpha"})
	edit := func(s string) []byte {
		t.Helper()
		if err := mustText(t, peer).Append(s); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Commit("peer"); err != nil {
			t.Fatal(err)
		}
		return peer.SaveIncremental()
	}
	for _, s := range []string{" beta", " gamma", " delta"} {
		if err := c.Agent("ada").Block("notes").Merge(ctx, edit(s)); err != nil {
			t.Fatalf("merging the peer's save after %q: %v", s, err)
		}
	}
	edit(" lost")
	err := c.Agent("ada").Block("notes").Merge(ctx, edit(" orphan"))
	if !errors.Is(err, blocks.ErrUnrelated) {
		t.Fatalf("a save whose predecessor was never merged: %v, want ErrUnrelated", err)
	}
	const want = "alpha beta gamma delta"
	if r, _ := c.Agent("ada").Block("notes").Render(ctx); r != want {
		t.Fatalf("stored rendering %q, want %q", r, want)
	}
	if got := text(t, openFile(t, path, nil), "ada", "notes"); got != want {
		t.Fatalf("another store reads %q, want %q", got, want)
	}
}

// The first embedder a store is opened with embeds what the store already
// holds before it is recorded: recorded alone, it left every earlier block,
// entry and message out of vector search for good (found by a new-user
// walkthrough). If that embedding fails, Open fails and nothing is
// recorded: the store still opens with another embedder.
func TestFirstEmbedderEmbedsExistingContent(t *testing.T) {
	runFirstEmbedder(t, filepath.Join(t.TempDir(), "first.db"))
}

func runFirstEmbedder(t *testing.T, path string) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "persona", Value: "The analytical engine computes tables."}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: "Babbage designed the difference engine."}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("ada").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "b1", Content: "Tell me about the engine."}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// A first embedder that fails: Open fails, nothing is recorded.
	failing, hang := hangingEmbedder(t, 8)
	hang()
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if c, err := memory.Open(cctx, fresh(path), &memory.Options{Embedder: failing}); err == nil {
		c.Close()
		t.Fatal("Open with a first embedder that cannot embed the existing content succeeded")
	}

	c, err = memory.Open(ctx, fresh(path), &memory.Options{Embedder: search.NewOffline(64)})
	if err != nil {
		t.Fatalf("open with another embedder after the failed one: %v", err)
	}
	defer c.Close()
	res, err := c.Agent("ada").Search(ctx, "engine", search.NewOptions().Mode(search.Vector).Limit(10))
	if err != nil {
		t.Fatal(err)
	}
	got := map[search.ContentType]int{}
	for _, r := range res {
		got[r.Type]++
	}
	for _, typ := range []search.ContentType{search.Blocks, search.Archival, search.Messages} {
		if got[typ] != 1 {
			t.Errorf("vector search found %d %v, want the one written before the store had an embedder (all: %+v)", got[typ], typ, res)
		}
	}
}

// No read sees an edit that is not durable yet: while a write waits for
// the write lock (here another connection holds it) and then fails, readers
// of the block see the state before it. The edit used to be visible the
// whole time, since it is applied to the cached document ahead of the lock.
func TestReadsDoNotSeeAWriteInFlight(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "inflight.db")
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "t", Value: "base"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("a").Block("t").Append(ctx, "."); err != nil {
		t.Fatal(err)
	}
	release := holdWriteLock(t, path)
	done := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
		defer cancel()
		done <- c.Agent("a").Block("t").Append(wctx, " GHOST")
	}()
	reads := 0
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		doc, err := c.Agent("a").Block("t").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := doc.Text()
		v, _ := doc.Value()
		for what, s := range map[string]string{"Text": text, "Render": doc.Render(), "Value": fmt.Sprint(v)} {
			if s != "base." {
				t.Fatalf("%s reads %q while the append waits for the lock; want %q", what, s, "base.")
			}
		}
		if doc.Size() != len("base.") {
			t.Fatalf("Size is %d while the append waits for the lock", doc.Size())
		}
		reads++
	}
	if err := <-done; err == nil {
		t.Fatal("the append succeeded while another connection held the write lock")
	}
	release()
	if reads == 0 {
		t.Fatal("no read ran while the append waited: the case tested nothing")
	}
	if err := c.Agent("a").Block("t").Append(ctx, "!"); err != nil {
		t.Fatal(err)
	}
	doc, _ := c.Agent("a").Block("t").Doc(ctx)
	if got := doc.Render(); got != "base.!" {
		t.Fatalf("after the failed append and another: %q", got)
	}
}

// Read your writes under concurrency: each goroutine's append is visible to
// its own next read, while other goroutines' appends to the same block are
// in flight.
func TestReadYourWritesWhileOthersWrite(t *testing.T) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "ryw.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "t", CharLimit: blocks.MaxCharLimit}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 25 {
				tok := fmt.Sprintf("[g%d-%d]", g, i)
				if err := c.Agent("a").Block("t").Append(ctx, tok); err != nil {
					t.Error(err)
					return
				}
				doc, err := c.Agent("a").Block("t").Doc(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if text, _ := doc.Text(); !strings.Contains(text, tok) {
					t.Errorf("goroutine %d does not read its own append %s", g, tok)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Write-back: an edit acknowledged while Close is flushing is written, or
// refused with ErrClosed; never acknowledged and dropped. Close used to list
// the dirty blocks, flush them, and only then refuse new writes: an edit to
// a block that was clean when listed returned nil and was lost.
func TestWriteBackEditDuringCloseIsKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wbclose.db")
	var armed atomic.Bool
	var once sync.Once
	inFlush, appended := make(chan struct{}), make(chan struct{})
	now := func() time.Time {
		if armed.Load() {
			once.Do(func() {
				close(inFlush) // Close is flushing b1
				select {       // let the concurrent append run first
				case <-appended:
				case <-time.After(5 * time.Second):
				}
			})
		}
		return time.Now()
	}
	c, err := memory.Open(ctx, fresh(path), &memory.Options{WriteBack: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"b1", "b2"} {
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: l}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Agent("a").Block("b1").Append(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	var appendErr error
	go func() {
		<-inFlush
		appendErr = c.Agent("a").Block("b2").Append(ctx, "two")
		close(appended)
	}()
	armed.Store(true)
	closeErr := c.Close()
	<-appended
	if closeErr != nil {
		t.Fatal(closeErr)
	}
	c, err = memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b1, _ := c.Agent("a").Block("b1").Render(ctx)
	b2, _ := c.Agent("a").Block("b2").Render(ctx)
	if b1 != "one" {
		t.Errorf("b1 = %q after Close, want %q", b1, "one")
	}
	switch {
	case appendErr == nil && b2 != "two":
		t.Errorf("the append during Close returned nil, but b2 = %q after reopening", b2)
	case appendErr != nil && !errors.Is(appendErr, memory.ErrClosed):
		t.Errorf("the append during Close: %v, want nil or ErrClosed", appendErr)
	}
}

// Write-back: a block evicted with edits its flush could not write (the
// write lock was held elsewhere) comes back as itself, edits and all: no
// second copy loaded beside it that hides those edits, checks the character
// limit without them, or orders later edits before them.
func TestWriteBackEvictedBlockComesBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wbevict.db")
	c, err := memory.Open(ctx, fresh(path), &memory.Options{WriteBack: true, CacheSize: 1, BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"b1", "b2"} {
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: l, CharLimit: 6}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("a").Block("b1").Append(ctx, "abc"); err != nil {
		t.Fatal(err)
	}
	release := holdWriteLock(t, path)
	if _, err := c.Agent("a").Block("b2").Doc(ctx); err != nil { // evicts b1; its flush fails
		t.Fatal(err)
	}
	release()

	d, err := c.Agent("a").Block("b1").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := d.Text(); text != "abc" {
		t.Errorf("b1 reads %q after its write-back append of %q", text, "abc")
	}
	if err := c.Agent("a").Block("b1").Append(ctx, "defg"); !errors.Is(err, blocks.ErrLimit) {
		t.Errorf("append past the 6-character limit: %v, want ErrLimit", err)
	}
	if err := c.Agent("a").Block("b1").Append(ctx, "de"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, _ := c.Agent("a").Block("b1").Render(ctx); r != "abcde" {
		t.Fatalf("b1 = %q after Close and reopening, want %q", r, "abcde")
	}
}

// A Remote event fired inside a write (the write caught up with another
// store's change after taking back an edit it had applied ahead) is read
// through views with that change in it: an event announces state a reader
// can see. (The in-flight read rule once hid it, and the write then failed,
// so no later event came.)
func TestRemoteEventInsideAWriteReadsTheChange(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "remote.db")
	a := openFile(t, path, nil)
	b := openFile(t, path, nil)
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "0123456789", CharLimit: 20}); err != nil {
		t.Fatal(err)
	}
	view, err := a.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var texts []string
	view.Subscribe(func(ev blocks.Event) {
		if ev.Remote {
			text, _ := view.Text()
			mu.Lock()
			texts = append(texts, text)
			mu.Unlock()
		}
	})
	if err := b.Agent("ada").Block("notes").Append(ctx, "BBBBBBBB"); err != nil { // 18 of 20
		t.Fatal(err)
	}
	// 15 on a's cached state (applied ahead), 23 on the fresh one: refused.
	if err := view.AppendText("AAAAA", blocks.Agent); !errors.Is(err, blocks.ErrLimit) {
		t.Fatalf("append over the limit on the fresh state: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(texts) == 0 || texts[len(texts)-1] != "0123456789BBBBBBBB" {
		t.Fatalf("Remote events read %q; the last must show b's change", texts)
	}
}

// Close from a subscriber callback, which runs inside the write that
// caught up, returns (it does not wait for that write), in both modes.
func TestCloseFromASubscriberInsideAWrite(t *testing.T) {
	for _, wb := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeback=%v", wb), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "c.db")
			a, err := memory.Open(ctx, fresh(path), &memory.Options{WriteBack: wb})
			if err != nil {
				t.Fatal(err)
			}
			b := openFile(t, path, nil)
			if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "x"}); err != nil {
				t.Fatal(err)
			}
			view, err := a.Agent("ada").Block("notes").Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			closed := make(chan error, 1)
			view.Subscribe(func(ev blocks.Event) {
				if ev.Remote {
					closed <- a.Close()
				}
			})
			if err := b.Agent("ada").Block("notes").Append(ctx, " b"); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- view.AppendText(" a", blocks.Agent) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Close from a Remote event's callback inside a write never returned")
			}
			if err := <-closed; err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

// While a write is in flight, a view's Save, Fork and History show the state
// before it, as its Value and Heads do; so a proposal's dry run (on a fork
// of the view) does not match text of a write that then fails.
func TestViewCRDTReadsOfAWriteInFlight(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.db")
	c := openFile(t, path, &memory.Options{BusyTimeout: 1500 * time.Millisecond})
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "durable"}); err != nil {
		t.Fatal(err)
	}
	view, err := c.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h0, _ := view.History()
	release := holdWriteLock(t, path)
	done := make(chan error, 1)
	go func() { done <- view.AppendText(" INFLIGHT", blocks.Agent) }() // applied ahead, waits for the lock
	time.Sleep(200 * time.Millisecond)
	hist, _ := view.History()
	saved, err := view.Save()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := blocks.Load(view.Info(), saved, nil)
	if err != nil {
		t.Fatal(err)
	}
	savedText, _ := loaded.Text()
	fork, err := view.Fork()
	if err != nil {
		t.Fatal(err)
	}
	forkText, _ := fork.Text()
	// The dry run happens now, during the flight; storing the proposal
	// waits for the lock (held until release), so it runs concurrently.
	perrc := make(chan error, 1)
	go func() {
		_, err := c.Agent("ada").Shared("ada", "notes").Propose(ctx, memory.Edit{Op: blocks.OpReplaceText, Old: "INFLIGHT", Text: "x"}, "")
		perrc <- err
	}()
	werr := <-done
	release()
	perr := <-perrc
	if !errors.Is(werr, memory.ErrPersist) {
		t.Fatalf("the write under a held lock: %v", werr)
	}
	if len(hist) != len(h0) || savedText != "durable" || forkText != "durable" {
		t.Errorf("during the flight: History %d changes (durable %d), Save holds %q, Fork reads %q", len(hist), len(h0), savedText, forkText)
	}
	if perr == nil {
		t.Errorf("ProposeEdit accepted a replacement of text only the failed write had")
	}
}

// A subscriber may call the store: Remote events wait until the store has
// released its lock on the block, so a subscriber that reads the block, or
// closes the store with edits of that block unflushed, does not deadlock —
// inside a write (write-through and write-back) or a read's catch-up.
func TestSubscribersMayCallTheStore(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		wb    bool
		call  func(c *memory.Store) // from the subscriber
		write bool                  // the catch-up is a write's (else a read's)
		want  string                // the subscriber's write, which must land
	}{
		{"GetBlock in a write", false, func(c *memory.Store) { c.Agent("ada").Block("notes").Doc(ctx) }, true, ""},
		{"GetBlock in a read", false, func(c *memory.Store) { c.Agent("ada").Block("notes").Doc(ctx) }, false, ""},
		{"Close in a write-back write, block dirty", true, func(c *memory.Store) { c.Close() }, true, ""},
		{"Close in a write", false, func(c *memory.Store) { c.Close() }, true, ""},
		// The README says a subscriber may write to the store: to the
		// block it was told about, from a write's catch-up and a read's.
		{"AppendToBlock in a write", false, func(c *memory.Store) { c.Agent("ada").Block("notes").Append(ctx, " sub") }, true, " sub"},
		{"AppendToBlock in a read", false, func(c *memory.Store) { c.Agent("ada").Block("notes").Append(ctx, " sub") }, false, " sub"},
		{"AppendToBlock in a write-back write", true, func(c *memory.Store) { c.Agent("ada").Block("notes").Append(ctx, " sub") }, true, " sub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub.db")
			a, err := memory.Open(ctx, fresh(path), &memory.Options{WriteBack: tc.wb})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b := openFile(t, path, nil)
			if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "x"}); err != nil {
				t.Fatal(err)
			}
			view, err := a.Agent("ada").Block("notes").Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wb {
				if err := view.AppendText(" pending", blocks.Agent); err != nil { // acknowledged, unflushed
					t.Fatal(err)
				}
			}
			var once sync.Once
			view.Subscribe(func(ev blocks.Event) {
				if ev.Remote {
					once.Do(func() { tc.call(a) })
				}
			})
			if err := b.Agent("ada").Block("notes").Append(ctx, " b"); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if tc.write {
					view.AppendText(" a", blocks.Agent)
				} else {
					a.Agent("ada").Block("notes").Doc(ctx)
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the subscriber's call never returned")
			}
			if tc.wb && tc.want == "" {
				c := openFile(t, path, nil)
				if r, _ := c.Agent("ada").Block("notes").Render(ctx); !strings.Contains(r, "pending") {
					t.Fatalf("the acknowledged write-back edit is gone after Close: %q", r)
				}
			}
			if tc.want != "" {
				if err := a.Close(); err != nil { // flushes a write-back store
					t.Fatal(err)
				}
				c := openFile(t, path, nil)
				if r, _ := c.Agent("ada").Block("notes").Render(ctx); !strings.Contains(r, tc.want) {
					t.Fatalf("the subscriber's write is not in the store: %q", r)
				}
			}
		})
	}
}

// Changes merged by MergeChanges are not seen, or announced, before they
// are durable: a merge whose write fails leaves views reading the state
// before it and fires no event.
func TestMergeChangesNotReadBeforeDurable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "merge.db")
	a := openFile(t, path, nil)
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "durable"}); err != nil {
		t.Fatal(err)
	}
	view, err := a.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fork, err := view.Fork()
	if err != nil {
		t.Fatal(err)
	}
	if err := fork.AppendText(" MERGED", blocks.System); err != nil {
		t.Fatal(err)
	}
	data, _, err := fork.PendingChanges()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER fail_updates BEFORE INSERT ON block_updates BEGIN SELECT RAISE(ABORT, 'injected failure'); END`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	view.Subscribe(func(ev blocks.Event) {
		s, _ := view.Text()
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	})
	if err := a.Agent("ada").Shared("ada", "notes").Merge(ctx, data); err == nil {
		t.Fatal("the merge's write succeeded despite the failing trigger")
	}
	mu.Lock()
	if len(seen) != 0 {
		t.Fatalf("subscribers heard of a merge that was taken back, reading %q", seen)
	}
	mu.Unlock()
	if text, _ := view.Text(); text != "durable" {
		t.Fatalf("after the failed merge the view reads %q", text)
	}
	// A merge that commits is announced, and read.
	if _, err := db.Exec(`DROP TRIGGER fail_updates`); err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("ada").Shared("ada", "notes").Merge(ctx, data); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "durable MERGED" {
		t.Fatalf("after a merge that committed, subscribers read %q", seen)
	}
}

// A subscriber reading its block from a Remote event fired by the flush of
// that block's eviction (write-back) does not deadlock on the load lock the
// eviction ran under.
func TestSubscriberReadDuringEvictionFlush(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "evict.db")
	a, err := memory.Open(ctx, fresh(path), &memory.Options{CacheSize: 1, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := openFile(t, path, nil)
	for _, l := range []string{"x", "y"} {
		if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: l, Value: l + "0"}); err != nil {
			t.Fatal(err)
		}
	}
	vx, err := a.Agent("ada").Block("x").Doc(ctx) // cached: x alone
	if err != nil {
		t.Fatal(err)
	}
	if err := vx.AppendText(" pending", blocks.Agent); err != nil { // x dirty
		t.Fatal(err)
	}
	if err := b.Agent("ada").Block("x").Append(ctx, " b"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	vx.Subscribe(func(ev blocks.Event) {
		if ev.Remote {
			once.Do(func() { a.Agent("ada").Block("x").Doc(ctx) })
		}
	})
	done := make(chan error, 1)
	go func() { _, err := a.Agent("ada").Block("y").Doc(ctx); done <- err }() // evicts x, flushing it
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the subscriber's GetBlock, fired by an eviction's flush, never returned")
	}
}

// A subscriber that panics (and a caller that recovers) leaves no write in
// flight: views read the durable state afterwards.
func TestPanickingSubscriberLeavesNoWriteInFlight(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	a := openFile(t, path, nil)
	b := openFile(t, path, nil)
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "x"}); err != nil {
		t.Fatal(err)
	}
	view, err := a.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	panicked := false
	view.Subscribe(func(ev blocks.Event) {
		if ev.Remote && !panicked {
			panicked = true
			panic("subscriber bug")
		}
	})
	if err := b.Agent("ada").Block("notes").Append(ctx, " b"); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { recover() }()
		view.AppendText(" a", blocks.Agent)
	}()
	if !panicked {
		t.Fatal("the subscriber never ran: the case tested nothing")
	}
	durable, _ := b.Agent("ada").Block("notes").Render(ctx)
	v, _ := a.Agent("ada").Block("notes").Doc(ctx)
	if got, _ := v.Text(); got != durable {
		t.Fatalf("after a recovered subscriber panic, views read %q; %q is durable", got, durable)
	}
}
