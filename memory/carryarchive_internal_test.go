package memory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
)

// An archived epoch that passes archivedEpochs (no checksum stored, as
// rows archived before migration 0008 have) but does not load: the carry
// through the archive fails, and the value difference (which needs no
// archive) carries the unflushed edit instead.
func TestSwitchCarriesEditsPastUnloadableArchive(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	s1, err := Open(ctx, path, &Options{HistoryLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := Open(ctx, path, &Options{HistoryLimit: -1, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	a1, a2 := s1.Agent("ann"), s2.Agent("ann")
	if _, err := a1.CreateBlock(ctx, BlockSpec{Label: "t", Value: "start", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	if _, err := a2.Block("t").Render(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a2.Block("t").Append(ctx, "\nours"); err != nil {
		t.Fatal(err)
	}
	if err := a1.Block("t").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.rdb.Exec(`UPDATE block_archive SET snapshot = X'00010203', snapshot_crc = NULL`); err != nil {
		t.Fatal(err)
	}
	ferr := s2.Flush(ctx)
	got, _ := a1.Block("t").Render(ctx)
	if ferr != nil || strings.Count(got, "ours") != 1 {
		t.Errorf("flush: %v; text %q: the unflushed edit is lost though the value difference needs no archive", ferr, got)
	}
}
