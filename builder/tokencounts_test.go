package builder_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

// A process that starts cold reads the token counts an earlier build
// saved instead of tokenizing every block again: equal prompts, and the
// counts really come from the store (a doctored count shows through).
func TestColdBuildReadsPersistedCounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counts.db")
	open := func() *memory.Store { return openFile(t, path) }
	first := open()
	for i := range 40 {
		mustBlock(t, first, "a", memory.BlockSpec{Label: fmt.Sprintf("notes%02d", i), Type: blocks.Core, Permission: blocks.Admin,
			Value: strings.Repeat(fmt.Sprintf("line %d of the ledger. ", i), 20)})
	}
	newBuilder := func(st *memory.Store) builder.Builder {
		cfg := builder.DefaultConfig()
		cfg.Cache = builder.NewCache()
		cfg.TokenCounts = st
		return builder.New(st.Agent("a"), cfg).WithBaseInstructions("Base.").WithModelInfo(builder.ModelInfo{Name: "gpt-4o"})
	}
	want := build(t, newBuilder(first))
	var n int
	if err := storeaccess.Backend(first).DB().QueryRow(`SELECT count(*) FROM token_counts`).Scan(&n); err != nil || n < 40 {
		t.Fatalf("token_counts rows after the first build: %d, %v", n, err)
	}
	first.Close()

	cold := open()
	got := build(t, newBuilder(cold))
	if got.System != want.System || got.Metadata.Tokens != want.Metadata.Tokens {
		t.Fatalf("cold build differs: tokens %+v vs %+v", got.Metadata.Tokens, want.Metadata.Tokens)
	}
	if _, err := storeaccess.Backend(cold).DB().Exec(`UPDATE token_counts SET tokens = 7`); err != nil {
		t.Fatal(err)
	}
	doctored := build(t, newBuilder(cold))
	for _, r := range doctored.Metadata.BlocksIncluded {
		if r.Tokens != 7 {
			t.Fatalf("block %s: %d tokens after doctoring the store, want 7 (counts not read from the store)", r.Label, r.Tokens)
		}
	}
	// A warm build keeps its in-process counts.
	b := newBuilder(cold)
	build(t, b)
	if _, err := storeaccess.Backend(cold).DB().Exec(`DELETE FROM token_counts`); err != nil {
		t.Fatal(err)
	}
	if again := build(t, b); again.Metadata.BlocksIncluded[0].Tokens != 7 {
		t.Fatalf("warm build recounted: %+v", again.Metadata.BlocksIncluded[0])
	}
}
