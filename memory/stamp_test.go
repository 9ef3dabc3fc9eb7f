package memory_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory"
)

// TestBlocksStampSeesOtherCaches: a change made through another Store on the
// same file (another process) changes the stamp read here, including for
// blocks shared with the agent, and both Caches read the same stamp.
func TestBlocksStampSeesOtherCaches(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two.db")
	open := func() *memory.Store {
		c, err := memory.Open(ctx, fresh(path), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	here, there := open(), open()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := here.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one", Permission: blocks.Admin})
	must(err)
	_, err = here.Agent("b").CreateBlock(ctx, memory.BlockSpec{Label: "board", Value: "start", Permission: blocks.Admin})
	must(err)
	stamp := func(c *memory.Store) memory.BlocksStamp {
		t.Helper()
		s, err := c.Agent("a").BlocksStamp(ctx)
		must(err)
		return s
	}
	cur := stamp(here)
	steps := []struct {
		what string
		f    func() error
	}{
		{"append", func() error { return there.Agent("a").Block("notes").Append(ctx, " two") }},
		{"pin", func() error { return there.Agent("a").Block("notes").SetPinned(ctx, true) }},
		{"share", func() error { return there.Agent("b").Block("board").Share(ctx, "a", blocks.Append) }},
		{"owner edits the shared block", func() error { return there.Agent("b").Block("board").Append(ctx, " more") }},
		{"re-share", func() error { return there.Agent("b").Block("board").Share(ctx, "a", blocks.ReadWrite) }},
		{"unshare", func() error { return there.Agent("b").Block("board").Unshare(ctx, "a") }},
		{"create", func() error {
			_, err := there.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "tmp", Permission: blocks.Admin})
			return err
		}},
		{"delete", func() error { return there.Agent("a").Block("tmp").Delete(ctx) }},
	}
	for _, st := range steps {
		must(st.f())
		next := stamp(here)
		if next == cur {
			t.Fatalf("%s through another Store: stamp unchanged", st.what)
		}
		if other := stamp(there); other != next {
			t.Fatalf("%s: the two Caches disagree: %+v vs %+v", st.what, next, other)
		}
		cur = next
	}
}

// TestReadMemosSeeEveryCommit: the stamp and an empty message read are
// remembered while nothing is committed (SQLite's data_version), and any
// commit, even one by a connection engram knows nothing of, ends that.
func TestReadMemosSeeEveryCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memo.db")
	here, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	there, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	raw, err := sql.Open(sqlitedriver.Name, path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := here.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one"}); err != nil {
		t.Fatal(err)
	}
	stamp := func() memory.BlocksStamp {
		t.Helper()
		s, err := here.Agent("a").BlocksStamp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s1 := stamp()
	if s2 := stamp(); s2 != s1 {
		t.Fatalf("stamp moved without a commit: %+v → %+v", s1, s2)
	}
	if _, err := raw.ExecContext(ctx, `UPDATE blocks SET meta_ver = meta_ver + 1 WHERE owner = 'a'`); err != nil {
		t.Fatal(err)
	}
	if s3 := stamp(); s3 == s1 {
		t.Fatal("a commit by a foreign connection left the remembered stamp in place")
	}

	m, err := here.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "first", BatchID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	after := &memory.MessageQuery{AfterID: m.ID}
	for range 2 { // the second read is the remembered one
		if ms, err := here.Agent("a").Messages().List(ctx, after); err != nil || len(ms) != 0 {
			t.Fatalf("messages after the last: %d, %v", len(ms), err)
		}
	}
	if _, err := there.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "second", BatchID: "b1"}); err != nil {
		t.Fatal(err)
	}
	if ms, err := here.Agent("a").Messages().List(ctx, after); err != nil || len(ms) != 1 || ms[0].Content != "second" {
		t.Fatalf("after another Store appended: %v, %v", ms, err)
	}
	if ms, err := here.Agent("a").Messages().List(ctx, &memory.MessageQuery{AfterID: m.ID + 1}); err != nil || len(ms) != 0 {
		t.Fatalf("after the newest: %v, %v", ms, err)
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
		SELECT agent, role, 'third', batch_id, seq + 1, created_at FROM messages WHERE id = ?`, m.ID+1); err != nil {
		t.Fatal(err)
	}
	if ms, err := here.Agent("a").Messages().List(ctx, &memory.MessageQuery{AfterID: m.ID + 1}); err != nil || len(ms) != 1 || ms[0].Content != "third" {
		t.Fatalf("after a foreign connection inserted: %v, %v", ms, err)
	}
}

// TestVersionCheckOnce: under WithVersionCheckOnce the reads of one
// operation check for commits once, at the first read, and see every
// commit made before it; a second database under the same context checks
// its own.
func TestVersionCheckOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	here, err := memory.Open(ctx, fresh(filepath.Join(dir, "a.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	there, err := memory.Open(ctx, fresh(filepath.Join(dir, "a.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	other, err := memory.Open(ctx, fresh(filepath.Join(dir, "b.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, s := range []*memory.Store{here, other} {
		if _, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one"}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := here.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "first", BatchID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	after := &memory.MessageQuery{AfterID: m.ID}
	// Remember a stamp and an empty read on both databases.
	s1, err := here.Agent("a").BlocksStamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o1, err := other.Agent("a").BlocksStamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := here.Agent("a").Messages().List(ctx, after); err != nil || len(ms) != 0 {
		t.Fatalf("messages after the last: %d, %v", len(ms), err)
	}
	// Commits by another Store (as another process's) on both files.
	second, err := there.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "second", BatchID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := there.Agent("a").Block("notes").SetText(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	if err := other.Agent("a").Block("notes").SetText(ctx, "two"); err != nil {
		t.Fatal(err)
	}

	op := memory.WithVersionCheckOnce(ctx)
	if s2, err := here.Agent("a").BlocksStamp(op); err != nil || s2 == s1 {
		t.Fatalf("stamp under the check: %+v (before %+v), %v", s2, s1, err)
	}
	if ms, err := here.Agent("a").Messages().List(op, after); err != nil || len(ms) != 1 || ms[0].Content != "second" {
		t.Fatalf("a commit before the operation's check: %v, %v", ms, err)
	}
	if o2, err := other.Agent("a").BlocksStamp(op); err != nil || o2 == o1 {
		t.Fatalf("the other database's stamp under the same context: %+v (before %+v), %v", o2, o1, err)
	}

	// Once means once: a read remembered under the operation's check
	// answers from memory for the rest of the operation, and a commit
	// after the check shows in the next operation.
	last := &memory.MessageQuery{AfterID: second.ID}
	if ms, err := here.Agent("a").Messages().List(op, last); err != nil || len(ms) != 0 {
		t.Fatalf("messages after the newest: %v, %v", ms, err)
	}
	if _, err := there.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "third", BatchID: "b1"}); err != nil {
		t.Fatal(err)
	}
	if ms, err := here.Agent("a").Messages().List(op, last); err != nil || len(ms) != 0 {
		t.Fatalf("within the operation, after its check: %v, %v (want the remembered empty read)", ms, err)
	}
	if ms, err := here.Agent("a").Messages().List(memory.WithVersionCheckOnce(ctx), last); err != nil || len(ms) != 1 || ms[0].Content != "third" {
		t.Fatalf("the next operation: %v, %v", ms, err)
	}
}
