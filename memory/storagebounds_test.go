package memory_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
)

// What an ordinary agent can make a store hold: every way in is bounded
// by a per-item cap and, with Options.AgentQuotaBytes, by the agent's
// quota.

// dbBytes is the SQLite database's size on disk once its WAL is folded in.
func dbBytes(t *testing.T, path string) int64 {
	t.Helper()
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// TRUNCATE reports busy (and truncates nothing) while a checkpoint
	// runs elsewhere: the store's own, in the background.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		var busy, frames, copied int
		if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &copied); err != nil {
			t.Fatal(err)
		}
		if busy == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the WAL could not be checkpointed for 10s")
		}
	}
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// words is n bytes of distinct random words: text a full-text index
// holds a posting for, word by word.
func words(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "w%x ", r.Uint64())
	}
	return b.String()[:n]
}

// TestProposalReasonIsCapped: a proposal's reason is the proposer's free
// text, stored with the proposal; like an archival entry's content it has
// a cap (here: it must not be larger than an archival entry may be).
func TestProposalReasonIsCapped(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "p.db"), nil)
	if _, err := c.Agent("mallory").CreateBlock(ctx, memory.BlockSpec{Label: "human", Permission: blocks.Human, Value: "likes tea"}); err != nil {
		t.Fatal(err)
	}
	reason := strings.Repeat("r", 2*memory.DefaultMaxArchivalBytes)
	_, err := c.Agent("mallory").Block("human").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: "."}, reason)
	if !errors.Is(err, memory.ErrTooLarge) {
		t.Fatalf("a proposal with a %d-byte reason: err %v, want ErrTooLarge", len(reason), err)
	}
}

// TestProposalsCountTowardQuota: an agent with a quota cannot store
// without bound by proposing edits: what its proposals hold counts, or
// their number is bounded.
func TestProposalsCountTowardQuota(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	const quota = 256 << 10
	c := openFile(t, path, &memory.Options{AgentQuotaBytes: quota})
	if _, err := c.Agent("mallory").CreateBlock(ctx, memory.BlockSpec{Label: "human", Permission: blocks.Human, Value: "likes tea"}); err != nil {
		t.Fatal(err)
	}
	before := dbBytes(t, path)
	reason := strings.Repeat("r", 16<<10) // under MaxProposalBytes: the quota must stop them
	stored := 0
	for i := range 256 { // 4 MiB of reasons, 16 times the quota
		_, err := c.Agent("mallory").Block("human").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: fmt.Sprint(" ", i)}, reason)
		if errors.Is(err, memory.ErrQuota) || errors.Is(err, memory.ErrTooLarge) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		stored++
	}
	grew := dbBytes(t, path) - before
	t.Logf("%d proposals stored, database grew %d bytes (quota %d)", stored, grew, quota)
	if stored == 0 || grew > 2*quota {
		t.Fatalf("an agent with a quota of %d bytes stored %d proposals, %d bytes on disk", quota, stored, grew)
	}
}

// TestQuotaBoundsDiskFootprint: what an agent's entries take on disk
// stays within a small multiple of what its quota counts, whatever the
// shape of the entries (UsageRowBytes is meant to cover rows and index
// entries).
func TestQuotaBoundsDiskFootprint(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "megabytes of entries in each shape")
	ctx := context.Background()
	// A 2 MiB quota with the long tests, 1 MiB otherwise: the same ratio
	// is checked.
	quota := int64(testenv.Scale(1<<20, 2<<20))
	r := rand.New(rand.NewPCG(1, 2))
	shapes := []struct {
		name  string
		entry func() memory.ArchivalEntry
	}{
		{"plain text", func() memory.ArchivalEntry {
			return memory.ArchivalEntry{Content: strings.Repeat("a", 4000)}
		}},
		{"distinct words", func() memory.ArchivalEntry { return memory.ArchivalEntry{Content: words(r, 4000)} }},
		{"64 long tags", func() memory.ArchivalEntry {
			tags := make([]string, memory.DefaultMaxTags)
			for i := range tags {
				tags[i] = words(r, memory.DefaultMaxTagBytes)
			}
			return memory.ArchivalEntry{Content: "x", Tags: tags}
		}},
		{"metadata of many values", func() memory.ArchivalEntry {
			meta := map[string]any{}
			for i := range 400 {
				meta[fmt.Sprint(i)] = fmt.Sprintf("v%x", r.Uint64())
			}
			return memory.ArchivalEntry{Content: "x", Metadata: meta}
		}},
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "q.db")
			c := openFile(t, path, &memory.Options{AgentQuotaBytes: quota, KeepDuplicates: true})
			before := dbBytes(t, path)
			n := 0
			for {
				_, err := c.Agent("mallory").Archival().Insert(ctx, s.entry())
				if errors.Is(err, memory.ErrQuota) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			used, _ := c.Agent("mallory").StorageUsed(ctx)
			grew := dbBytes(t, path) - before
			t.Logf("%s: %d entries, %d bytes counted, database grew %d bytes (%.1f×)", s.name, n, used, grew, float64(grew)/float64(used))
			if grew > 3*quota {
				t.Errorf("%s: %d entries counted %d bytes against a quota of %d; the database grew %d bytes (%.1f×)",
					s.name, n, used, quota, grew, float64(grew)/float64(used))
			}
		})
	}
}
