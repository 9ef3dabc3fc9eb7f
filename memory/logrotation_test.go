package memory_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
	"github.com/engram-go/engram/tools"
)

// switchEmbedder is the offline embedder, but it can be down (every call
// fails) or slow (every call waits, honouring its context).
type switchEmbedder struct {
	search.Embedder
	down atomic.Bool
	slow atomic.Int64 // nanoseconds
}

func (e *switchEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.down.Load() {
		return nil, errors.New("embedder is down")
	}
	if d := time.Duration(e.slow.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.Embedder.Embed(ctx, texts)
}

// checkLogContents counts every message in the block and in its rotated
// archival rows (each must be in exactly one place, once) and, with an
// embedder, checks that a vector search over the rotated rows finds every
// one of them.
func checkLogContents(t *testing.T, c *memory.Store, label string, acked []string) {
	t.Helper()
	ctx := context.Background()
	d, err := c.Agent("a").Block(label).Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := d.LogEntries(0)
	if err != nil {
		t.Fatal(err)
	}
	arch, err := c.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"log:" + label}, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.Message]++
	}
	for _, e := range arch {
		seen[e.Content]++
	}
	for m, n := range seen {
		if n != 1 {
			t.Errorf("entry %q is %d times in the block and archival, want once", m, n)
		}
	}
	for _, m := range acked {
		if seen[m] != 1 {
			t.Errorf("acknowledged entry %q is %d times in the block and archival, want once", m, seen[m])
		}
	}
	if len(arch) == 0 {
		t.Fatal("nothing was rotated")
	}
	if storeaccess.Index(c).Embedder() == nil {
		return
	}
	// Rotated without vectors, embedded afterwards: a vector search (which
	// flushes the marks first) finds every rotated entry.
	res, err := c.Agent("a").Archival().Search(ctx, "entry", search.NewOptions().Mode(search.Vector).Tags("log:"+label).Limit(len(arch)+10))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(arch) {
		t.Errorf("vector search finds %d of the %d rotated entries", len(res), len(arch))
	}
}

// A full Log block rotates before it overflows, in the append's own
// transaction and without waiting for an embedder, so callers with 0–3 ms
// deadlines never lock it up. Before, rotation ran after the append and
// embedded first: with the deadline it never ran, the block filled up and
// every later append, deadline or not, failed with ErrLimit for good.
func TestLogRotatesUnderDeadlines(t *testing.T) {
	runLogRotatesUnderDeadlines(t, filepath.Join(t.TempDir(), "log.db"))
}

func TestLogRotatesUnderDeadlinesPostgres(t *testing.T) {
	runLogRotatesUnderDeadlines(t, pgtest.Start(t).NewDatabase(t))
}

func runLogRotatesUnderDeadlines(t *testing.T, path string) {
	ctx := context.Background()
	emb := &switchEmbedder{Embedder: search.NewOffline(32)}
	c := openFile(t, path, &memory.Options{Embedder: emb})
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 400,
		Schema: schema.Log{Retention: 5}}); err != nil {
		t.Fatal(err)
	}
	emb.slow.Store(int64(20 * time.Millisecond))
	var acked []string
	for i := range 200 {
		msg := fmt.Sprintf("entry %03d with some words to fill the log", i)
		dctx, cancel := context.WithTimeout(ctx, time.Duration(i%4)*time.Millisecond)
		err := c.Agent("a").Block("events").Apply(dctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: msg})
		cancel()
		switch {
		case err == nil:
			acked = append(acked, msg)
		case errors.Is(err, blocks.ErrLimit):
			t.Fatalf("append %d: %v: a full log must rotate, not refuse", i, err)
		case !errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if len(acked) == 0 {
		t.Log("no append beat its deadline")
	}
	if err := c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: "entry after the deadlines"}); err != nil {
		t.Fatalf("a normal append after the deadline loop: %v", err)
	}
	acked = append(acked, "entry after the deadlines")
	emb.slow.Store(0)
	checkLogContents(t, c, "events", acked)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	checkLogContents(t, openFile(t, path, &memory.Options{Embedder: search.NewOffline(32)}), "events", acked)
}

// With the embedder down, a Log block still rotates and takes every
// append; once it is back, the rotated entries get their vectors. Before,
// each rotation failed on the embedder, the block filled up, and it kept
// refusing appends after the embedder came back.
func TestLogRotatesWhileEmbedderIsDown(t *testing.T) {
	runLogRotatesWhileEmbedderIsDown(t, filepath.Join(t.TempDir(), "log.db"))
}

func TestLogRotatesWhileEmbedderIsDownPostgres(t *testing.T) {
	runLogRotatesWhileEmbedderIsDown(t, pgtest.Start(t).NewDatabase(t))
}

func runLogRotatesWhileEmbedderIsDown(t *testing.T, path string) {
	ctx := context.Background()
	emb := &switchEmbedder{Embedder: search.NewOffline(32)}
	c := openFile(t, path, &memory.Options{Embedder: emb})
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 400,
		Schema: schema.Log{Retention: 5}}); err != nil {
		t.Fatal(err)
	}
	var acked []string
	appendEntry := func(msg string) {
		t.Helper()
		if err := c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: msg}); err != nil {
			t.Fatalf("append %q (embedder down: %v): %v", msg, emb.down.Load(), err)
		}
		acked = append(acked, msg)
	}
	emb.down.Store(true)
	for i := range 40 {
		appendEntry(fmt.Sprintf("entry %03d with some words to fill the log", i))
	}
	emb.down.Store(false)
	for i := range 5 {
		appendEntry(fmt.Sprintf("entry %03d after the embedder came back", i))
	}
	checkLogContents(t, c, "events", acked)
}

// An entry too large for the block on its own is the one append a
// rotating log refuses: ErrLimit naming the block and the agent, and
// nothing changes.
func TestLogEntryLargerThanTheBlock(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "log.db"), nil)
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 100,
		Schema: schema.Log{Retention: 5}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "two"} {
		if err := c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: m}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := c.Agent("a").Block("events").Render(ctx)
	big := fmt.Sprintf("%0100d", 0)
	err := c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: big})
	if !errors.Is(err, blocks.ErrLimit) {
		t.Fatalf("an entry larger than the block: %v, want ErrLimit", err)
	}
	for _, want := range []string{`"events"`, `"a"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if after, _ := c.Agent("a").Block("events").Render(ctx); after != before {
		t.Errorf("the refused append changed the block: %q -> %q", before, after)
	}
	if arch, _ := c.Agent("a").Archival().List(ctx, nil); len(arch) != 0 {
		t.Errorf("the refused append rotated %d entries", len(arch))
	}
}

// Rotation is part of the write, so every path that appends to a Log
// block rotates the same way: ApplyEdit, the log_append tool, and a view
// from GetBlock. Before, only store edits rotated; appends through a view
// grew the block past its retention until it was full.
func TestLogRotationOnEveryPath(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	paths := map[string]func(c *memory.Store, msg string) error{
		"ApplyEdit": func(c *memory.Store, msg string) error {
			return c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: msg})
		},
		"tool": func(c *memory.Store, msg string) error {
			ts, err := tools.New(c.Agent("a"), nil)
			if err != nil {
				return err
			}
			args, _ := json.Marshal(map[string]any{"label": "events", "message": msg})
			res, err := ts.Call(ctx, tools.LogAppend, args)
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error: %v", res)
			}
			return err
		},
		"view": func(c *memory.Store, msg string) error {
			d, err := c.Agent("a").Block("events").Doc(ctx)
			if err != nil {
				return err
			}
			return d.AppendLogEntry(map[string]any{"message": msg}, blocks.Agent)
		},
	}
	type outcome struct {
		Value    any
		Rendered string
		Archival []string
	}
	got := map[string]outcome{}
	for name, appendEntry := range paths {
		tick := 0
		now := func() time.Time { tick++; return clock.Add(time.Duration(tick) * time.Second) }
		path := filepath.Join(t.TempDir(), "log.db")
		c := openFile(t, path, &memory.Options{Now: now})
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, Permission: blocks.Append,
			CharLimit: 200, Schema: schema.Log{Retention: 3}}); err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			if err := appendEntry(c, fmt.Sprintf("entry %d of the log", i)); err != nil {
				t.Fatalf("%s: append %d: %v", name, i, err)
			}
		}
		c.Close()
		c = openFile(t, path, &memory.Options{Now: now})
		d, err := c.Agent("a").Block("events").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := d.Value()
		r, _ := c.Agent("a").Block("events").Render(ctx)
		arch, _ := c.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"log:events"}})
		o := outcome{Value: v, Rendered: r}
		for _, e := range arch {
			meta, _ := json.Marshal(e.Metadata)
			o.Archival = append(o.Archival, fmt.Sprintf("%s %v %s %s", e.Content, e.Tags, meta, e.CreatedAt.UTC().Format(time.RFC3339)))
		}
		if entries, _ := d.LogEntries(0); len(entries) != 3 || len(arch) != 5 {
			t.Errorf("%s: %d entries kept and %d rotated, want 3 and 5", name, len(entries), len(arch))
		}
		got[name] = o
	}
	want := got["ApplyEdit"]
	for name, o := range got {
		if fmt.Sprint(o) != fmt.Sprint(want) {
			t.Errorf("%s gives\n%+v\nApplyEdit gives\n%+v", name, o, want)
		}
	}
}

// A process killed (SIGKILL) while it appends to a rotating Log block
// loses nothing it acknowledged and duplicates nothing: the trim and the
// rotated entries' archival rows (with their marks for the embedder)
// commit together. After each kill, every acknowledged entry is in the
// block or archival exactly once and vector search finds every rotated
// entry (marks survive the crash with their rows).
func TestKillDuringLogRotation(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "log.db")
	opts := &memory.Options{Embedder: search.NewOffline(32)}
	c := openFile(t, path, opts)
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 300,
		Schema: schema.Log{Retention: 4}}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var acked []string
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRoleLogWriter$")
		cmd.Env = childEnv("logwriter", "ENGRAM_DB="+path, "ENGRAM_ROUND="+strconv.Itoa(round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		killAfter := 5 + rng.IntN(40)
		n := 0
		for n < killAfter && sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
				acked = append(acked, v)
				n++
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for sc.Scan() { // an ACK printed before the kill still counts
			if v, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
				acked = append(acked, v)
			}
		}
		_ = cmd.Wait()
		if n == 0 {
			t.Fatalf("round %d: the child acknowledged nothing:\n%s", round, stderr.String())
		}
		c := openFile(t, path, opts)
		var check string
		if err := storeaccess.Backend(c).DB().QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
			t.Fatalf("round %d: integrity_check = %q, %v", round, check, err)
		}
		checkLogContents(t, c, "events", acked)
		c.Close()
	}
}

// TestRoleLogWriter is the child side of TestKillDuringLogRotation.
func TestRoleLogWriter(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "logwriter" {
		t.Skip("child role")
	}
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(os.Getenv("ENGRAM_DB")), &memory.Options{Embedder: search.NewOffline(32)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		msg := fmt.Sprintf("entry r%s-%04d with some words to fill the log", os.Getenv("ENGRAM_ROUND"), i)
		if err := c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: msg}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("ACK %s\n", msg)
	}
}

// In write-back mode an append that may rotate is written through: the
// trim and the archival rows commit together, so another store sees both
// before any Flush.
func TestLogRotationInWriteBackMode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "log.db")
	c := openFile(t, path, &memory.Options{WriteBack: true})
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, Schema: schema.Log{Retention: 2}}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: fmt.Sprintf("entry %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	other := openFile(t, path, nil)
	checkLogContents(t, other, "events", []string{"entry 0", "entry 1", "entry 2", "entry 3", "entry 4"})
	d, err := other.Agent("a").Block("events").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := d.LogEntries(0); len(entries) != 2 {
		t.Errorf("another store reads %d entries, want 2", len(entries))
	}
}

// The store's embedder worker embeds rotated entries without a search
// asking for them: the marks their rotation left are cleared.
func TestRotatedEntriesEmbeddedInBackground(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "log.db"), &memory.Options{Embedder: search.NewOffline(32)})
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, Schema: schema.Log{Retention: 2}}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if err := c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: fmt.Sprintf("entry %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var marks, vectors int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM vec_archival_dirty`).Scan(&marks); err != nil {
			t.Fatal(err)
		}
		if marks == 0 {
			break
		}
	}
	if err := storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM vec_archival`).Scan(&vectors); err != nil {
		t.Fatal(err)
	}
	if marks != 0 || vectors != 4 {
		t.Fatalf("after the worker ran: %d entries still marked, %d vectors; want 0 and 4", marks, vectors)
	}
}

// A Log block holds entries archival would refuse as they are — an empty
// or blank message, a NUL byte in the message or a field — and rotation
// still stores each of them, so the append that rotates one, and every
// append after it, is taken. Before, archival refused the rotated entry
// ("has empty content", "contains a NUL byte"), which refused the append,
// and the entry stayed the oldest: the log took no append ever again.
func TestLogRotatesEntriesArchivalWouldRefuse(t *testing.T) {
	runLogRotatesEntriesArchivalWouldRefuse(t, filepath.Join(t.TempDir(), "log.db"))
}

func TestLogRotatesEntriesArchivalWouldRefusePostgres(t *testing.T) {
	runLogRotatesEntriesArchivalWouldRefuse(t, pgtest.Start(t).NewDatabase(t))
}

func runLogRotatesEntriesArchivalWouldRefuse(t *testing.T, path string) {
	ctx := context.Background()
	c := openFile(t, path, &memory.Options{Embedder: search.NewOffline(32)})
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 400,
		Schema: schema.Log{Retention: 2, Entry: []schema.FieldDef{{Name: "who", Type: schema.FieldString}}}}); err != nil {
		t.Fatal(err)
	}
	entries := []map[string]any{
		{"message": ""}, {"message": "   "}, {"message": "x\x00y"}, {"message": "field", "who": "q\x00"},
	}
	for i := range 6 {
		entries = append(entries, map[string]any{"message": fmt.Sprintf("entry %d", i)})
	}
	d, err := c.Agent("a").Block("events").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acked := 0
	for i, e := range entries {
		err := d.AppendLogEntry(e, blocks.Agent)
		if err != nil && (i < 2 || i > 3) {
			t.Fatalf("append %d %q: %v (a log must take every append whose own entry it can hold)", i, e, err)
		}
		// (PostgreSQL cannot hold a NUL byte in the block's rendering: the
		// entries holding one may be refused there, but not wedge the log.)
		if err == nil {
			acked++
		}
	}
	check := func(c *memory.Store) {
		t.Helper()
		d, err := c.Agent("a").Block("events").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := d.LogEntries(0)
		if err != nil {
			t.Fatal(err)
		}
		arch, err := c.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"log:events"}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(kept)+len(arch) != acked {
			t.Errorf("%d entries kept and %d rotated, want %d acknowledged", len(kept), len(arch), acked)
		}
		if len(kept) != 2 {
			t.Errorf("%d entries kept, want the retention's 2", len(kept))
		}
	}
	check(c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	check(openFile(t, path, nil))
}

type gateEmbedder struct {
	search.Embedder
	gate    string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (e *gateEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, s := range texts {
		if s == e.gate {
			e.once.Do(func() { close(e.entered) })
			<-e.release
		}
	}
	return e.Embedder.Embed(ctx, texts)
}

// A rotated entry's vector is computed from its own text. The embedder
// worker reads a marked entry, embeds it outside the lock and stores the
// vector under the lock; meanwhile the entry can be deleted and its id
// taken by another agent's rotated entry (SQLite reuses the highest
// rowid), marked in turn. Before, the worker stored the deleted entry's
// vector (agent a's text) for agent b's entry and cleared its mark: b's
// entry never got its own vector.
func TestRotatedEntryVectorIsItsOwn(t *testing.T) {
	ctx := context.Background()
	t1 := "the first entry talks about apples and orchards"
	t2 := "second entry concerns submarine engines underwater"
	emb := &gateEmbedder{Embedder: search.NewOffline(32), gate: t1, entered: make(chan struct{}), release: make(chan struct{})}
	c := openFile(t, filepath.Join(t.TempDir(), "log.db"), &memory.Options{Embedder: emb})
	for _, ag := range []string{"a", "b"} {
		if _, err := c.Agent(ag).CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 4000,
			Schema: schema.Log{Retention: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	app := func(ag, m string) {
		t.Helper()
		if err := c.Agent(ag).Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: m}); err != nil {
			t.Fatal(err)
		}
	}
	app("a", t1)
	app("b", t2)
	app("a", "a filler") // rotates t1 (a)
	select {
	case <-emb.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker did not embed t1")
	}
	arch, _ := c.Agent("a").Archival().List(ctx, nil)
	if len(arch) != 1 {
		t.Fatalf("%d", len(arch))
	}
	if err := c.Agent("a").Archival().Delete(ctx, arch[0].ID); err != nil {
		t.Fatal(err)
	}
	app("b", "b filler") // rotates t2 (b), reusing the id
	barch, _ := c.Agent("b").Archival().List(ctx, nil)
	if barch[0].ID != arch[0].ID {
		t.Skipf("b's entry got id %d, not the deleted entry's %d", barch[0].ID, arch[0].ID)
	}
	close(emb.release)
	// The worker's round ends (with its mark cleared, or left for its
	// next round, which clears it) before the search's own flush.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var marks int
		if err := storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM vec_archival_dirty`).Scan(&marks); err != nil {
			t.Fatal(err)
		}
		if marks == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d marks left", marks)
		}
	}
	if _, err := c.Agent("b").Archival().Insert(ctx, memory.ArchivalEntry{Content: t2}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Agent("b").Archival().Search(ctx, t2, search.NewOptions().Mode(search.Vector).Limit(10))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Score != res[1].Score {
		t.Errorf("the rotated entry's vector is not its own text's (its score %v, the same text inserted directly %v)", res[len(res)-1].Score, res[0].Score)
	}
}

// Entries a store without an embedder rotates out are embedded by a store
// on the same database that has one (as block writes are: every block
// write is marked by a trigger). Before, the store without an embedder
// left no mark, so the other store's worker never embedded them and a
// vector search over archival never found them.
func TestRotatedEntriesEmbeddedByAnotherStore(t *testing.T) {
	runRotatedEntriesEmbeddedByAnotherStore(t, filepath.Join(t.TempDir(), "log.db"))
}

func TestRotatedEntriesEmbeddedByAnotherStorePostgres(t *testing.T) {
	runRotatedEntriesEmbeddedByAnotherStore(t, pgtest.Start(t).NewDatabase(t))
}

func runRotatedEntriesEmbeddedByAnotherStore(t *testing.T, path string) {
	ctx := context.Background()
	withEmb := openFile(t, path, &memory.Options{Embedder: search.NewOffline(32)})
	if _, err := withEmb.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 300,
		Schema: schema.Log{Retention: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := withEmb.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: "entry first"}); err != nil {
		t.Fatal(err)
	}
	acked := []string{"entry first"}
	runner := openFile(t, path, nil)
	for i := range 10 {
		msg := fmt.Sprintf("entry %d from the runner", i)
		if err := runner.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: msg}); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, msg)
	}
	checkLogContents(t, withEmb, "events", acked)
}

// A Log section of a Composite block rotates as a Log block does: its
// Retention holds, and an append that would pass the block's limit rotates
// the section's oldest entries into archival, in write-through and
// write-back mode. Before, the schema took a section's Retention and the
// store ignored it: the section kept every entry until the block was full,
// then refused every append (ErrLimit).
func TestLogSectionRotates(t *testing.T) {
	for _, wb := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeback=%v", wb), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "log.db")
			c := openFile(t, path, &memory.Options{WriteBack: wb})
			if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "desk", CharLimit: 300,
				Schema: schema.Composite{Sections: []schema.Section{
					{Name: "notes", Schema: schema.Text{}},
					{Name: "events", Schema: schema.Log{Retention: 3}},
				}}}); err != nil {
				t.Fatal(err)
			}
			if err := c.Agent("a").Block("desk").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Section: "notes", Text: "some notes\n"}); err != nil {
				t.Fatal(err)
			}
			var acked []string
			for i := range 30 {
				msg := fmt.Sprintf("entry %02d %s", i, strings.Repeat("w", i%4*20))
				if err := c.Agent("a").Block("desk").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Section: "events", Text: msg}); err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
				acked = append(acked, msg)
			}
			check := func(c *memory.Store) {
				t.Helper()
				d, err := c.Agent("a").Block("desk").Doc(ctx)
				if err != nil {
					t.Fatal(err)
				}
				v, err := d.Section("events").Value()
				if err != nil {
					t.Fatal(err)
				}
				kept := v.([]blocks.LogEntry)
				if n := utf8.RuneCountInString(d.Render()); n > 300 {
					t.Errorf("the block renders %d characters, limit 300", n)
				}
				if len(kept) > 3 {
					t.Errorf("the section keeps %d entries, retention 3", len(kept))
				}
				arch, err := c.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"log:desk"}, Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]int{}
				for _, e := range kept {
					seen[e.Message]++
				}
				for _, e := range arch {
					seen[e.Content]++
				}
				for _, m := range acked {
					if seen[m] != 1 {
						t.Errorf("acknowledged entry %q is %d times in the section and archival, want once", m, seen[m])
					}
				}
			}
			check(c)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			check(openFile(t, path, nil))
		})
	}
}

// A full Log block with Retention and a read-only entry field rotates on
// an append by its owner and by a sharee, at Append and at ReadWrite: the
// rotation is the store's doing, not the appender's.
func TestLogRotationBySharee(t *testing.T) {
	ctx := context.Background()
	for _, perm := range []blocks.Permission{blocks.Append, blocks.ReadWrite} {
		t.Run(perm.String(), func(t *testing.T) {
			c := openFile(t, filepath.Join(t.TempDir(), "m.db"), nil)
			if _, err := c.CreateBlock(ctx, "bob", memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 120, Permission: perm,
				Schema: schema.Log{Retention: 3, Entry: []schema.FieldDef{{Name: "level", Type: schema.FieldString, Default: "info", ReadOnly: true}}}}); err != nil {
				t.Fatal(err)
			}
			if err := c.ShareBlock(ctx, "bob", "events", "ada", perm); err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				who, owner := "ada", "bob"
				if i%2 == 0 {
					who, owner = "bob", ""
				}
				if err := c.ApplyEdit(ctx, who, owner, "events", memory.Edit{Op: blocks.OpAppendLogEntry, Text: fmt.Sprintf("entry %02d with words", i)}); err != nil {
					t.Fatalf("append %d by %s: %v", i, who, err)
				}
			}
			r, err := c.RenderedContent(ctx, "bob", "events")
			t.Logf("%q %v", r, err)
			d, _ := c.GetBlock(ctx, "bob", "events")
			v, _ := d.Value()
			if err := blocks.CheckValue(d.Schema(), v); err != nil {
				t.Fatal(err)
			}
		})
	}
}
