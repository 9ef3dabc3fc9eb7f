package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentLoopOffline(t *testing.T) {
	t.Setenv("ENGRAM_LLM_BASE_URL", "")
	f, err := os.Create(filepath.Join(t.TempDir(), "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, _ := os.ReadFile(f.Name())
	out := string(b)
	for _, want := range []string{
		"tool block_append", "tool archival_insert", "tool archival_search",
		"Nice to meet you, Robin", "From my memory: Name: Robin. Keeps bees.", "Robin keeps bees",
		// Recalled memory, the library and the reference to the file.
		"swarmed last June", "Hive A: strong colony", "this turn [notes/hives.md full]", "library [notes/hives.md full]; this turn [notes/hives.md reference]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
}
