package memory_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

func TestAdmin(t *testing.T) { testAdmin(t, filepath.Join(t.TempDir(), "admin.db")) }

func TestAdminPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("PostgreSQL: not in -short")
	}
	testAdmin(t, pgtest.Start(t).NewDatabase(t))
}

func testAdmin(t *testing.T, target string) {
	ctx := context.Background()
	c := openFile(t, target, &memory.Options{Embedder: search.NewOffline(16)})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []struct{ owner, label string }{{"ada", "notes"}, {"ada", "plan"}, {"bob", "board"}} {
		_, err := c.Agent(b.owner).CreateBlock(ctx, memory.BlockSpec{Label: b.label, Permission: blocks.Admin})
		must(err)
		for range 3 {
			must(c.Agent(b.owner).Block(b.label).Append(ctx, "line\n"))
		}
	}
	must(c.Agent("bob").Block("board").Share(ctx, "cy", blocks.ReadWrite)) // cy owns nothing
	_, err := c.Agent("cy").Shared("bob", "board").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: "more\n"}, "")
	must(err)
	old, err := c.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: "the first version"})
	must(err)
	_, err = c.Agent("ada").Archival().Supersede(ctx, old.ID, memory.ArchivalEntry{Content: "the second version"})
	must(err)
	_, err = c.Agent("dee").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "b1", Content: "hello"})
	must(err)

	adm := c.Admin()
	agents, err := adm.Agents(ctx)
	if err != nil || !slices.Equal(agents, []string{"ada", "bob", "cy", "dee"}) {
		t.Errorf("Agents = %v, %v", agents, err)
	}
	pc, err := adm.ProposalCounts(ctx)
	if want := map[string]memory.ProposalCount{"bob": {All: 1, Pending: 1}}; err != nil || !maps.Equal(pc, want) {
		t.Errorf("ProposalCounts = %v, %v; want %v", pc, err, want)
	}
	st, err := adm.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, latest, _ := storeaccess.Backend(c).SchemaVersion(ctx)
	if st.Backend != storeaccess.Backend(c).Name() || st.SchemaVersion != latest || st.Embedder != storeaccess.Index(c).Embedder().Name() ||
		st.EmbedderDims != 16 || st.VectorEngine == "" {
		t.Errorf("Stats = %+v", st)
	}
	if name, dims, err := adm.RecordedEmbedder(ctx); err != nil || name != st.Embedder || dims != 16 {
		t.Errorf("RecordedEmbedder = %q, %d, %v", name, dims, err)
	}
	n := st.Counts
	if n.Agents != 4 || n.Blocks != 3 || n.Shares != 1 || n.Archival != 2 || n.ArchivalCurrent != 1 || n.Messages != 1 ||
		n.ProposalsPending != 1 || n.BlockUpdates < 9 || n.UpdateBytes == 0 || n.ArchivedEpochs != 0 {
		t.Errorf("Counts = %+v", n)
	}

	// One owner's blocks, then every block rebased.
	var progress [][2]int
	done, err := adm.Compact(ctx, &memory.CompactOptions{Owner: "ada", Progress: func(d, total int) { progress = append(progress, [2]int{d, total}) }})
	if err != nil || done != 2 || !slices.Equal(progress, [][2]int{{1, 2}, {2, 2}}) {
		t.Fatalf("Compact(ada) = %d, %v; progress %v", done, err, progress)
	}
	after, err := adm.Stats(ctx)
	must(err)
	if after.Counts.BlockUpdates >= n.BlockUpdates || after.Counts.BlockUpdates == 0 {
		t.Errorf("after compacting ada's blocks: %d updates (before %d; bob's remain)", after.Counts.BlockUpdates, n.BlockUpdates)
	}
	if done, err := adm.Compact(ctx, &memory.CompactOptions{Rebase: true}); err != nil || done != 3 {
		t.Fatalf("Compact(rebase) = %d, %v", done, err)
	}
	after, err = adm.Stats(ctx)
	must(err)
	if after.Counts.ArchivedEpochs != 3 || after.Counts.BlockUpdates != 0 {
		t.Errorf("after rebasing every block: %+v", after.Counts)
	}

	c.Close()
	if _, err := adm.Stats(ctx); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("Stats after Close: %v", err)
	}
	if _, err := adm.Agents(ctx); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("Agents after Close: %v", err)
	}
	if _, _, err := adm.RecordedEmbedder(ctx); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("RecordedEmbedder after Close: %v", err)
	}
	if _, err := adm.Compact(ctx, nil); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("Compact after Close: %v", err)
	}
}
