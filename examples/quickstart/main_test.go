package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// TestQuickstart runs the README's main command and checks what it shows.
func TestQuickstart(t *testing.T) {
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&buf, r); close(done) }()
	err := run(context.Background())
	w.Close()
	os.Stdout = stdout
	<-done
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"permission denied",                            // Append block not rewritten
		"plan [read-only]: pro",                        // schema default kept
		`shared_from="archive"`,                        // shared block in context
		"- entropy: finding 3", "- archive: finding 3", // concurrent edits merged
		"fts#1 vec#1",           // hybrid search
		"called at most 1 time", // tool rule enforced
		"# Tool Execution Rules",
		"[Summary of the earlier conversation]", // compressed history
		"Note that the CSV fix is done",         // active batch kept
	} {
		if !strings.Contains(out, want) {
			t.Errorf("quickstart output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}
