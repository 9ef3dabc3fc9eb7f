package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

func TestNormalizeContent(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"  Hello   World \n", "hello world"},
		{"HELLO\tworld", "hello world"},
		{"Straße", "strasse"},
		{"ＡＢＣ", "ａｂｃ"},             // full width: case-folded, kept wide (NFC)
		{"ﬁle", "file"},            // ligature: full case folding splits it
		{"10² m²", "10² m²"},       // superscripts kept (NFC, not NFKC)
		{"e\u0301", "\u00e9"},      // composed
		{"\u00a0x\u3000y ", "x y"}, // no-break and ideographic spaces
		{"", ""},
		{"bad \xff byte", "bad \ufffd byte"},
	} {
		if got := memory.NormalizeContent(c.in); got != c.want {
			t.Errorf("NormalizeContent(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzNormalizeContent(f *testing.F) {
	for _, s := range []string{"Hello  World", "Straße", "ＡＢＣ", "e\u0301", " \u0301a", "\xff\xfe", "ǅ", "ΐ", "a\u00a0\u0345"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := memory.NormalizeContent(s)
		if !utf8.ValidString(n) {
			t.Fatalf("NormalizeContent(%q) = %q: invalid UTF-8", s, n)
		}
		if n2 := memory.NormalizeContent(n); n2 != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, n, n2)
		}
		if strings.TrimSpace(n) != n || strings.Contains(n, "  ") {
			t.Fatalf("NormalizeContent(%q) = %q: white space not collapsed", s, n)
		}
		if memory.NormalizeContent(strings.ToUpper(s)+"  ") != memory.NormalizeContent(strings.ToUpper(n)) {
			// Upper-casing then normalising equals upper-casing the
			// normal form then normalising for every ordinary text; the
			// exceptions are special casings, which we only log.
			t.Logf("case: %q", s)
		}
	})
}

func openDedup(t *testing.T, target string, o *memory.Options) *memory.Store {
	t.Helper()
	c, err := memory.Open(context.Background(), fresh(target), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func liveCount(t *testing.T, c *memory.Store, agent string) int {
	t.Helper()
	es, err := c.Agent(agent).Archival().List(context.Background(), &memory.ArchivalQuery{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestInsertArchivalDeduplicates(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		first      memory.ArchivalEntry
		second     memory.ArchivalEntry
		keep       bool
		wantDup    bool
		wantTags   []string
		wantMeta   map[string]any
		wantStored int
	}{
		{name: "same text", first: memory.ArchivalEntry{Content: "The user likes tea."}, second: memory.ArchivalEntry{Content: "The user likes tea."},
			wantDup: true, wantStored: 1},
		{name: "case and space", first: memory.ArchivalEntry{Content: "The user likes tea."}, second: memory.ArchivalEntry{Content: "  the USER   likes\ttea. "},
			wantDup: true, wantStored: 1},
		{name: "punctuation differs", first: memory.ArchivalEntry{Content: "The user likes tea."}, second: memory.ArchivalEntry{Content: "The user likes tea!"},
			wantStored: 2},
		{name: "tags union, metadata kept then added",
			first:   memory.ArchivalEntry{Content: "fact", Tags: []string{"a", "b"}, Metadata: map[string]any{"source": "chat", "n": 1.0}},
			second:  memory.ArchivalEntry{Content: "FACT", Tags: []string{"c", "a"}, Metadata: map[string]any{"source": "email", "lang": "en"}},
			wantDup: true, wantStored: 1, wantTags: []string{"a", "b", "c"}, wantMeta: map[string]any{"source": "chat", "n": 1.0, "lang": "en"}},
		{name: "other conversation", first: memory.ArchivalEntry{Content: "Thanks!", Metadata: map[string]any{"conversation": "s1"}},
			second: memory.ArchivalEntry{Content: "Thanks!", Metadata: map[string]any{"conversation": "s2"}}, wantStored: 2},
		{name: "same session", first: memory.ArchivalEntry{Content: "Thanks!", Metadata: map[string]any{"session": "s1"}},
			second: memory.ArchivalEntry{Content: "thanks!", Metadata: map[string]any{"session": "s1", "turn": 2.0}}, wantDup: true, wantStored: 1,
			wantMeta: map[string]any{"session": "s1", "turn": 2.0}},
		{name: "other numbered session", first: memory.ArchivalEntry{Content: "Thanks!", Metadata: map[string]any{"session": 3}},
			second: memory.ArchivalEntry{Content: "Thanks!", Metadata: map[string]any{"session": 4}}, wantStored: 2},
		{name: "number and string are two sessions", first: memory.ArchivalEntry{Content: "Thanks!", Metadata: map[string]any{"thread_id": 3}},
			second: memory.ArchivalEntry{Content: "Thanks!", Metadata: map[string]any{"thread_id": "3"}}, wantStored: 2},
		{name: "same numbered session", first: memory.ArchivalEntry{Content: "Thanks!", Metadata: map[string]any{"session_id": 3}},
			second: memory.ArchivalEntry{Content: "thanks!", Metadata: map[string]any{"session_id": 3.0}}, wantDup: true, wantStored: 1,
			wantMeta: map[string]any{"session_id": 3.0}},
		{name: "no conversation vs one", first: memory.ArchivalEntry{Content: "Thanks!"},
			second: memory.ArchivalEntry{Content: "Thanks!", Metadata: map[string]any{"conversation": "s2"}}, wantStored: 2},
		{name: "keep duplicates", first: memory.ArchivalEntry{Content: "fact"}, second: memory.ArchivalEntry{Content: "fact"}, keep: true, wantStored: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), &memory.Options{KeepDuplicates: c.keep})
			a, err := s.Agent("ag").Archival().Insert(ctx, c.first)
			if err != nil {
				t.Fatal(err)
			}
			if a.Duplicate {
				t.Fatal("first insert marked duplicate")
			}
			used0, _ := s.Agent("ag").StorageUsed(ctx)
			b, err := s.Agent("ag").Archival().Insert(ctx, c.second)
			if err != nil {
				t.Fatal(err)
			}
			if b.Duplicate != c.wantDup {
				t.Fatalf("Duplicate = %v, want %v", b.Duplicate, c.wantDup)
			}
			if n := liveCount(t, s, "ag"); n != c.wantStored {
				t.Fatalf("%d live entries, want %d", n, c.wantStored)
			}
			if !c.wantDup {
				return
			}
			if b.ID != a.ID || b.Content != a.Content {
				t.Fatalf("duplicate returned %d %q, want entry %d %q", b.ID, b.Content, a.ID, a.Content)
			}
			got, err := s.Agent("ag").Archival().Get(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if c.wantTags != nil && !slices.Equal(got.Tags, c.wantTags) {
				t.Errorf("tags %v, want %v", got.Tags, c.wantTags)
			}
			if c.wantMeta != nil && fmt.Sprint(got.Metadata) != fmt.Sprint(c.wantMeta) {
				t.Errorf("metadata %v, want %v", got.Metadata, c.wantMeta)
			}
			if fmt.Sprint(got.Tags, got.Metadata) != fmt.Sprint(b.Tags, b.Metadata) {
				t.Errorf("returned %v %v, stored %v %v", b.Tags, b.Metadata, got.Tags, got.Metadata)
			}
			// The usage counter moved by exactly the merge.
			used1, _ := s.Agent("ag").StorageUsed(ctx)
			want := used0
			if c.wantTags != nil || c.wantMeta != nil {
				var all int64
				for _, e := range []memory.ArchivalEntry{got} {
					all += entryBytes(t, e)
				}
				want = all
			}
			if used1 != want {
				t.Errorf("StorageUsed %d after the duplicate, want %d (before %d)", used1, want, used0)
			}
			// Searching finds it once.
			if tags, _ := s.Agent("ag").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"c"}}); c.wantTags != nil && len(tags) != 1 {
				t.Errorf("tag index: %d entries tagged c, want 1", len(tags))
			}
		})
	}
}

// entryBytes is what e counts toward its agent's usage.
func entryBytes(t *testing.T, e memory.ArchivalEntry) int64 {
	t.Helper()
	s := openDedup(t, ":memory:", &memory.Options{KeepDuplicates: true})
	if _, err := s.Agent("x").Archival().Insert(context.Background(), memory.ArchivalEntry{Content: e.Content, Tags: e.Tags, Metadata: e.Metadata}); err != nil {
		t.Fatal(err)
	}
	n, err := s.Agent("x").StorageUsed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDuplicateAtQuota(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s := openDedup(t, path, nil)
	if _, err := s.Agent("ag").Archival().Insert(ctx, memory.ArchivalEntry{Content: "a fact worth keeping"}); err != nil {
		t.Fatal(err)
	}
	used, _ := s.Agent("ag").StorageUsed(ctx)
	s.Close()
	// A quota the agent has just reached: a new entry is refused, its
	// duplicate is not (it adds nothing).
	s = openDedup(t, path, &memory.Options{AgentQuotaBytes: used})
	if _, err := s.Agent("ag").Archival().Insert(ctx, memory.ArchivalEntry{Content: "another fact"}); !errors.Is(err, memory.ErrQuota) {
		t.Fatalf("new entry at quota: %v, want ErrQuota", err)
	}
	d, err := s.Agent("ag").Archival().Insert(ctx, memory.ArchivalEntry{Content: "A fact worth keeping"})
	if err != nil || !d.Duplicate {
		t.Fatalf("duplicate at quota: %+v, %v", d, err)
	}
	ds, err := s.Agent("ag").Archival().InsertBatch(ctx, []memory.ArchivalEntry{{Content: "a fact worth keeping"}, {Content: "A FACT worth keeping"}}, nil)
	if err != nil || len(ds) != 2 || !ds[0].Duplicate || !ds[1].Duplicate {
		t.Fatalf("duplicate batch at quota: %+v, %v", ds, err)
	}
	// A merge that grows the entry counts.
	if _, err := s.Agent("ag").Archival().Insert(ctx, memory.ArchivalEntry{Content: "a fact worth keeping", Tags: []string{"new"}}); !errors.Is(err, memory.ErrQuota) {
		t.Fatalf("growing merge at quota: %v, want ErrQuota", err)
	}
	if n, _ := s.Agent("ag").StorageUsed(ctx); n != used {
		t.Fatalf("StorageUsed %d, want %d", n, used)
	}
}

func TestInsertArchivalBatchDeduplicates(t *testing.T) {
	ctx := context.Background()
	s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), nil)
	if _, err := s.Agent("ag").Archival().Insert(ctx, memory.ArchivalEntry{Content: "stored before", Tags: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	in := []memory.ArchivalEntry{
		{Content: "one"}, {Content: "two", Tags: []string{"t"}}, {Content: "ONE", Tags: []string{"u"}},
		{Content: "Stored   before", Tags: []string{"y"}}, {Content: "three"}, {Content: "two "},
	}
	out, err := s.Agent("ag").Archival().InsertBatch(ctx, in, &memory.BatchOptions{Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d results for %d entries", len(out), len(in))
	}
	wantDup := []bool{false, false, true, true, false, true}
	for i, e := range out {
		if e.Duplicate != wantDup[i] {
			t.Errorf("entry %d (%q): Duplicate %v, want %v", i, in[i].Content, e.Duplicate, wantDup[i])
		}
	}
	if out[0].ID != out[2].ID || out[1].ID != out[5].ID {
		t.Errorf("batch duplicates got other ids: %d/%d, %d/%d", out[0].ID, out[2].ID, out[1].ID, out[5].ID)
	}
	if n := liveCount(t, s, "ag"); n != 4 {
		t.Fatalf("%d live entries, want 4", n)
	}
	got, _ := s.Agent("ag").Archival().Get(ctx, out[0].ID)
	if !slices.Equal(got.Tags, []string{"u"}) {
		t.Errorf("merged batch tags %v", got.Tags)
	}
	got, _ = s.Agent("ag").Archival().Get(ctx, out[3].ID)
	if !slices.Equal(got.Tags, []string{"x", "y"}) {
		t.Errorf("merged stored tags %v", got.Tags)
	}
}

func TestSupersedeWithDeduplication(t *testing.T) {
	ctx := context.Background()
	s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), nil)
	a, _ := s.Agent("ag").Archival().Insert(ctx, memory.ArchivalEntry{Content: "the sky is green"})
	b, err := s.Agent("ag").Archival().Supersede(ctx, a.ID, memory.ArchivalEntry{Content: "The sky is blue"})
	if err != nil || b.Duplicate {
		t.Fatal(b, err)
	}
	// The superseded text is no longer live: inserting it again stores it.
	c, err := s.Agent("ag").Archival().Insert(ctx, memory.ArchivalEntry{Content: "the sky is green"})
	if err != nil || c.Duplicate || c.ID == a.ID {
		t.Fatalf("re-inserting a superseded text: %+v, %v", c, err)
	}
	// Superseding with the text of another live entry points at it.
	d, err := s.Agent("ag").Archival().Supersede(ctx, c.ID, memory.ArchivalEntry{Content: "the sky is BLUE"})
	if err != nil || !d.Duplicate || d.ID != b.ID {
		t.Fatalf("supersede onto a live duplicate: %+v, %v", d, err)
	}
	old, _ := s.Agent("ag").Archival().Get(ctx, c.ID)
	if old.ValidTo == nil || old.SupersededBy != b.ID {
		t.Fatalf("superseded entry: %+v", old)
	}
	if n := liveCount(t, s, "ag"); n != 1 {
		t.Fatalf("%d live entries, want 1", n)
	}
}

// TestDedupBackfill: entries stored before the keys existed (keys cleared
// by hand here) get them at the next Open: the oldest of live duplicates
// keeps the key and the others stay, keyless; a new insert then merges
// into the oldest.
func TestDedupBackfill(t *testing.T) {
	ctx := context.Background()
	for _, target := range backfillTargets(t) {
		t.Run(target.name, func(t *testing.T) {
			s := openDedup(t, target.url, &memory.Options{KeepDuplicates: true})
			var ids []int64
			for _, c := range []string{"same fact", "Same fact", "other", "SAME  FACT"} {
				e, err := s.Agent("ag").Archival().Insert(ctx, memory.ArchivalEntry{Content: c})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, e.ID)
			}
			if _, err := storeaccess.Backend(s).DB().ExecContext(ctx, `UPDATE archival SET content_key = NULL`); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = openDedup(t, target.url, nil)
			var keyed int
			if err := storeaccess.Backend(s).DB().QueryRowContext(ctx, `SELECT count(*) FROM archival WHERE content_key IS NULL`).Scan(&keyed); err != nil || keyed != 0 {
				t.Fatalf("%d entries without keys after Open (%v)", keyed, err)
			}
			e, err := s.Agent("ag").Archival().Insert(ctx, memory.ArchivalEntry{Content: "same FACT"})
			if err != nil || !e.Duplicate || e.ID != ids[0] {
				t.Fatalf("insert after back-fill: %+v, %v; want duplicate of %d", e, err, ids[0])
			}
			if n := liveCount(t, s, "ag"); n != 4 {
				t.Fatalf("%d live entries, want the 4 stored", n)
			}
		})
	}
}

type namedTarget struct{ name, url string }

func backfillTargets(t *testing.T) []namedTarget {
	out := []namedTarget{{"sqlite", filepath.Join(t.TempDir(), "m.db")}}
	if testing.Short() {
		return out
	}
	return append(out, namedTarget{"postgres", pgtest.Start(t).NewDatabase(t)})
}

const dedupFacts = 200

// TestTwoProcessesSameFacts: two OS processes × 8 goroutines insert the
// same 200 facts, each in its own random order, half of them through
// batches: exactly 200 live entries remain and no caller saw an error.
func TestTwoProcessesSameFacts(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	runSameFacts(t, filepath.Join(t.TempDir(), "m.db"))
}

func TestPostgresTwoProcessesSameFacts(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	runSameFacts(t, pgtest.Start(t).NewDatabase(t))
}

func runSameFacts(t *testing.T, target string) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(target), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRoleSameFacts$", "-test.v")
		cmd.Env = childEnv("samefacts", "ENGRAM_DB="+target, "ENGRAM_PROC="+strconv.Itoa(p), "ENGRAM_DIR="+dir)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d failed: %v\n%s", p, err, outs[p])
		}
	}
	c, err = memory.Open(ctx, fresh(target), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	es, err := c.Agent("facts").Archival().List(ctx, &memory.ArchivalQuery{Limit: 10000, IncludeSuperseded: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range es {
		seen[memory.NormalizeContent(e.Content)]++
	}
	if len(es) != dedupFacts || len(seen) != dedupFacts {
		t.Fatalf("%d entries, %d distinct facts; want %d of each", len(es), len(seen), dedupFacts)
	}
	// The usage counter counts each entry once.
	used, _ := c.Agent("facts").StorageUsed(ctx)
	var want int64
	for _, e := range es {
		want += int64(len(e.Content)) + 2 + 2 + memory.UsageRowBytes
	}
	if used != want {
		t.Fatalf("StorageUsed %d, want %d", used, want)
	}
}

// TestRoleSameFacts is the child of runSameFacts.
func TestRoleSameFacts(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "samefacts" {
		t.Skip("child role")
	}
	ctx := context.Background()
	proc, _ := strconv.Atoi(os.Getenv("ENGRAM_PROC"))
	c, err := memory.Open(ctx, fresh(os.Getenv("ENGRAM_DB")), childOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Both processes start together.
	dir := os.Getenv("ENGRAM_DIR")
	os.WriteFile(filepath.Join(dir, "ready"+strconv.Itoa(proc)), nil, 0o600)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		_, e0 := os.Stat(filepath.Join(dir, "ready0"))
		_, e1 := os.Stat(filepath.Join(dir, "ready1"))
		if e0 == nil && e1 == nil {
			break
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*dedupFacts)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(proc*100 + g)))
			order := rng.Perm(dedupFacts)
			for i := 0; i < len(order); {
				fact := func(k int) string {
					// Case and spacing vary by writer: all one fact.
					s := fmt.Sprintf("Fact number %d: the answer is %d.", k, k*7)
					if (g+k)%2 == 1 {
						s = "  " + strings.ToUpper(s)
					}
					return s
				}
				if g%2 == 0 {
					if _, err := c.Agent("facts").Archival().Insert(ctx, memory.ArchivalEntry{Content: fact(order[i])}); err != nil {
						errs <- err
					}
					i++
					continue
				}
				n := min(1+rng.Intn(5), len(order)-i)
				batch := make([]memory.ArchivalEntry, n)
				for j := range batch {
					batch[j] = memory.ArchivalEntry{Content: fact(order[i+j])}
				}
				if _, err := c.Agent("facts").Archival().InsertBatch(ctx, batch, nil); err != nil {
					errs <- err
				}
				i += n
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// rollBackDedup undoes SQLite migration 0027's archival column (its
// proposals rebuild applies again as it is).
var rollBackDedup = []string{
	`DROP INDEX archival_live_key`,
	`DROP INDEX archival_key_pending`,
	`ALTER TABLE archival DROP COLUMN content_key`,
}

// TestNormalizeContentASCII holds NormalizeContent's ASCII path to the
// Unicode one: every pair of ASCII bytes, each between letters and spaces,
// and random ASCII strings.
func TestNormalizeContentASCII(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := memory.NormalizeContent(s), memory.NormalizeUnicode(s); got != want {
			t.Fatalf("NormalizeContent(%q) = %q, the Unicode path gives %q", s, got, want)
		}
	}
	for a := range 128 {
		for b := range 128 {
			check(string([]byte{byte(a), byte(b)}))
			check(" Ab" + string([]byte{byte(a)}) + " \t" + string([]byte{byte(b)}) + "Zy ")
		}
	}
	rng := rand.New(rand.NewSource(1))
	for range 2000 {
		b := make([]byte, rng.Intn(40))
		for i := range b {
			b[i] = byte(rng.Intn(128))
		}
		check(string(b))
	}
}
