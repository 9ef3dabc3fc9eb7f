package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/cmd/engram/internal/ui"
	"github.com/engram-go/engram/memory"
)

// contextStore is a store with a core block, an archival memory and a
// context library artifact for ada.
func contextStore(t *testing.T) string {
	t.Helper()
	clearEmbedEnv(t)
	db := filepath.Join(t.TempDir(), "ctx.db")
	ok(t, db, "--embedder", "offline", "block", "create", "--agent", "ada", "--label", "persona", "--type", "core", "--value", "I am Ada.")
	ok(t, db, "archival", "add", "--agent", "ada", "Ada takes her tea with lemon.")
	s, err := memory.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Agent("ada").PutContextLibrary(context.Background(), []memory.LibraryEntry{{ID: "notes/tea.md", Kind: "file", Content: "Earl Grey, lemon."}}); err != nil {
		t.Fatal(err)
	}
	return db
}

// engram context shows every layer: the builder's base
// instructions (as the web UI), the environment unless --no-environment,
// the context library, the current message and the memories recalled for
// it, with each layer's tokens against its budget.
func TestCLIContextLayers(t *testing.T) {
	db := contextStore(t)
	out, errs, code := cli(t, db, "How do I take my tea?", "context", "--agent", "ada", "--message", "-", "--recall", "3", "--recall-mode", "vector")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{strings.SplitN(builder.DefaultBaseInstructions, "\n", 2)[0], "<recalled_memories>", "Ada takes her tea with lemon.",
		"<environment>", "Current date:", "Earl Grey, lemon.", "[user] How do I take my tea?", "=== layers ===",
		"recalled_memories  ", "environment  ", "context_library  ", "%"} {
		if !strings.Contains(out, want) {
			t.Errorf("engram context lacks %q:\n%s", want, out)
		}
	}
	// The CLI and the web UI build the same system prompt.
	s, err := memory.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, err := ui.BuildContext(context.Background(), s, &ui.ContextOptions{Agent: "ada", NoEnvironment: true})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	var js struct{ System string }
	if err := json.Unmarshal([]byte(ok(t, db, "--json", "context", "--agent", "ada", "--no-environment")), &js); err != nil || js.System != req.System {
		t.Fatalf("CLI and UI disagree on the system prompt (%v):\nCLI:\n%s\nUI:\n%s", err, js.System, req.System)
	}
	out = ok(t, db, "context", "--agent", "ada", "--no-environment", "--no-library", "--base", "@"+writeTemp(t, "Be brief."))
	if strings.Contains(out, "<environment>") || strings.Contains(out, "Earl Grey") || !strings.HasPrefix(out, "=== system ===\nBe brief.") {
		t.Errorf("--no-environment --no-library --base @FILE:\n%s", out)
	}
	// Recall needs a message.
	if _, errs, code := cli(t, db, "", "context", "--agent", "ada", "--recall", "2"); code != 2 || !strings.Contains(errs, "--message") {
		t.Errorf("--recall without --message: exit %d, %q", code, errs)
	}
}

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// --format prints the provider's request body.
func TestCLIContextFormats(t *testing.T) {
	db := contextStore(t)
	for _, tc := range []struct {
		format, model string
		keys          []string
	}{
		{"openai", "gpt-4o", []string{"model", "messages", "tools"}},
		{"anthropic", "claude-sonnet-4-5", []string{"model", "max_tokens", "system", "messages", "tools"}},
		{"gemini", "gemini-2.5-pro", []string{"systemInstruction", "contents", "tools"}},
	} {
		out, _, code := cli(t, db, "", "context", "--agent", "ada", "--message", "hello", "--model", tc.model, "--format", tc.format)
		var body map[string]any
		if err := json.Unmarshal([]byte(out), &body); code != 0 || err != nil {
			t.Fatalf("--format %s: exit %d, %v\n%s", tc.format, code, err, out)
		}
		for _, k := range tc.keys {
			if body[k] == nil {
				t.Errorf("--format %s: no %q in the body", tc.format, k)
			}
		}
		if !strings.Contains(out, "hello") || !strings.Contains(out, "I am Ada.") {
			t.Errorf("--format %s body lacks the message or the memory:\n%s", tc.format, out)
		}
	}
	if _, errs, code := cli(t, db, "", "context", "--agent", "ada", "--format", "mistral"); code != 2 || !strings.Contains(errs, "openai, anthropic or gemini") {
		t.Errorf("--format mistral: exit %d, %q", code, errs)
	}
}

// A model's window comes from its family; Claude and Gemini get a
// note that their counts are estimates, an unknown model a warning that
// its window and tokenizer are the defaults.
func TestCLIContextModelLimits(t *testing.T) {
	db := contextStore(t)
	for _, tc := range []struct {
		model string
		max   int
		note  string
	}{
		{"gpt-4o", 128_000, ""},
		{"gpt-4.1", 1_047_576, ""},
		{"claude-sonnet-4-5", 200_000, "cl100k_base estimates"},
		{"gemini-2.5-pro", 1_048_576, "cl100k_base estimates"},
		{"llama-3.3-70b", builder.DefaultMaxTokens, `model "llama-3.3-70b" is not one engram knows`},
	} {
		out, errs, code := cli(t, db, "", "--json", "context", "--agent", "ada", "--model", tc.model)
		var v struct {
			Metadata struct {
				Limits struct {
					MaxTokens int `json:"max_tokens"`
				} `json:"limits"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
			t.Fatalf("%s: exit %d %v: %s", tc.model, code, err, errs)
		}
		if v.Metadata.Limits.MaxTokens != tc.max {
			t.Errorf("%s: window %d, want %d", tc.model, v.Metadata.Limits.MaxTokens, tc.max)
		}
		if tc.note == "" && errs != "" || tc.note != "" && !strings.Contains(errs, tc.note) {
			t.Errorf("%s: stderr %q, want %q", tc.model, errs, tc.note)
		}
	}
	out, errs, _ := cli(t, db, "", "--json", "context", "--agent", "ada", "--model", "llama-3.3-70b", "--max-tokens", "32768")
	if !strings.Contains(out, `"max_tokens": 32768`) || strings.Contains(errs, "not one engram knows") || !strings.Contains(errs, "estimates") {
		t.Errorf("--max-tokens 32768: stderr %q", errs)
	}
	// An 8k window kept the 8,000-token reply reserve sized for 128k
	// windows: 192 tokens of input.
	out, errs, code := cli(t, db, "", "--json", "context", "--agent", "ada", "--model", "llama-3-8b", "--max-tokens", "8192")
	var small struct {
		Metadata struct {
			Limits struct {
				Reserved int `json:"reserved_response_tokens"`
				Memory   int `json:"memory_tokens"`
			} `json:"limits"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &small); code != 0 || err != nil {
		t.Fatalf("--max-tokens 8192: exit %d %v: %s", code, err, errs)
	}
	if l := small.Metadata.Limits; l.Reserved != 2048 || l.Memory != 2048 {
		t.Errorf("--max-tokens 8192: reserve %d, memory %d; want 2048 each", l.Reserved, l.Memory)
	}
}

// A negative --max-tokens or --recall was taken silently: --max-tokens -5
// built for the default 128k window as if the flag were not given, and
// --recall -1 recalled nothing. The web UI's Context page refuses both;
// the CLI says so with a usage error (exit 2).
func TestCLIContextNegativeCounts(t *testing.T) {
	db := filepath.Join(t.TempDir(), "n.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--type", "core", "--value", "I am Ada.")
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"max-tokens", []string{"--max-tokens", "-5"}, "--max-tokens"},
		{"recall", []string{"--message", "hi", "--recall", "-1"}, "--recall"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := cli(t, db, "", append([]string{"context", "--agent", "ada"}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.flag) {
				t.Fatalf("exit %d, stderr %q; want a usage error naming %s", code, errs, tc.flag)
			}
		})
	}
}

// A TEXT argument read from a file or standard input was read whole,
// however large: --message @/dev/zero read until the process ran out of
// memory (a 67 MB file took 20 s and 800 MB). It is read up to a cap and
// refused past it, naming the cap.
func TestCLITextArgumentCap(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	db := filepath.Join(t.TempDir(), "c.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--type", "core", "--value", "I am Ada.")
	done := make(chan struct{})
	var errs string
	var code int
	go func() {
		defer close(done)
		_, errs, code = cli(t, db, "", "context", "--agent", "ada", "--message", "@/dev/zero")
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("--message @/dev/zero still reading after 30 s")
	}
	if code == 0 || !strings.Contains(errs, "MiB") {
		t.Fatalf("--message @/dev/zero: exit %d, stderr %q; want a refusal naming the cap", code, errs)
	}
}
