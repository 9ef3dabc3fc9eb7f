package ui

import (
	"context"
	"html/template"
	"net/url"
	"strings"
	"testing"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
)

// The Context page shows the layers "engram context"
// builds: the environment (on unless turned off), the context library,
// the current message and the memories recalled for it, each with its
// token bar, and notes on a model engram does not know.
func TestContextPageLayers(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.store.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: "Ada takes her tea with lemon."}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Agent("ada").PutContextLibrary(ctx, []memory.LibraryEntry{{ID: "notes/tea.md", Kind: "file", Content: "Earl Grey, lemon."}}); err != nil {
		t.Fatal(err)
	}
	q := url.Values{"agent": {"ada"}, "model": {"claude-sonnet-4-5"}, "message": {"How do I take my tea?"}, "recall": {"3"}}
	code, body := f.get(t, "/context?"+q.Encode())
	if code != 200 {
		t.Fatalf("status %d:\n%s", code, body)
	}
	req, err := BuildContext(ctx, f.store, &ContextOptions{Agent: "ada", Model: "claude-sonnet-4-5", Message: "How do I take my tea?", Recall: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{builder.SectionBase, builder.SectionRecalled, builder.SectionLibrary, builder.SectionEnvironment} {
		var sec *builder.Section
		for i := range req.Sections {
			if req.Sections[i].Name == name {
				sec = &req.Sections[i]
			}
		}
		if sec == nil {
			t.Errorf("BuildContext has no %s section", name)
			continue
		}
		bar := `<meter min="0" max="` + itoa(int64(sectionBudget(req.Metadata.Tokens, name))) + `" value="`
		if !strings.Contains(body, "<code>"+name+"</code>") || !strings.Contains(body, bar) {
			t.Errorf("context page lacks the %s layer and its bar", name)
		}
	}
	for _, want := range []string{"Ada takes her tea with lemon.", "Earl Grey, lemon.", "How do I take my tea?", "Current date:",
		template.HTMLEscapeString(builder.DefaultBaseInstructions[:40]), "192,000", "cl100k_base estimates"} {
		if !strings.Contains(body, want) {
			t.Errorf("context page lacks %q", want)
		}
	}
	// Off switches and an unknown model's note.
	q = url.Values{"agent": {"ada"}, "model": {"llama-3.3-70b"}, "no_environment": {"1"}, "no_library": {"1"}}
	_, body = f.get(t, "/context?"+q.Encode())
	if strings.Contains(body, "<code>environment</code>") || strings.Contains(body, "<code>context_library</code>") {
		t.Error("no_environment / no_library left the section in")
	}
	if !strings.Contains(body, template.HTMLEscapeString(`model "llama-3.3-70b" is not one engram knows`)) {
		t.Error("no note on an unknown model")
	}
	if code, _ := f.get(t, "/context?agent=ada&recall=x"); code != 400 {
		t.Errorf("recall=x: status %d", code)
	}
}
