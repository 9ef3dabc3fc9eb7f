package ui

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// addMerges stores two pairs of near-exact archival entries for ada and
// lets consolidation propose merging each pair; it returns the proposals.
func addMerges(t *testing.T, f *fixture) []memory.Proposal {
	t.Helper()
	ctx := context.Background()
	arch := f.store.Agent("ada").Archival()
	for _, s := range []string{"The deploy is on Friday.", "the deploy is on friday", "Bob's birthday is in May!", "bob's birthday is in may"} {
		if _, err := arch.Insert(ctx, memory.ArchivalEntry{Content: s}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := arch.Consolidate(ctx, nil)
	if err != nil || len(rep.Proposals) != 2 {
		t.Fatalf("Consolidate = %+v, %v; want two proposals", rep, err)
	}
	return []memory.Proposal{f.proposal(t, rep.Proposals[0]), f.proposal(t, rep.Proposals[1])}
}

// TestProposalsPageShowsArchivalMerges: a consolidation proposal shows its
// source entries beside the merged text, with its kind and similarity,
// and a person can approve (the sources are superseded by the merged
// entry) or reject it from the page.
func TestProposalsPageShowsArchivalMerges(t *testing.T) {
	f := newFixture(t)
	ps := addMerges(t, f)
	// Counted with the block proposals (the fixture has two).
	if _, body := f.get(t, "/"); !strings.Contains(body, "4 pending proposals") {
		t.Errorf("overview does not count the merges: %s", excerpt(body))
	}
	_, body := f.get(t, "/proposals")
	for _, p := range ps {
		id := itoa(p.ID)
		art := between(body, `<article class="proposal" id="proposal-`+id+`"`, "</article>")
		if art == "" {
			t.Fatalf("proposals page lacks merge proposal %s: %s", id, excerpt(body))
		}
		for _, want := range []string{
			"archival memory of <a href=\"/agents/ada\">ada</a>",
			"<code>merge_archival</code>", "near-exact", "similarity 1.00",
			`<div class="merge">`, `<h4>merged</h4>`, `id="approve-` + id + `"`, `id="reject-` + id + `"`,
		} {
			if !strings.Contains(art, want) {
				t.Errorf("merge proposal %s lacks %q: %s", id, want, art)
			}
		}
		for _, src := range p.Merge.Sources {
			e, err := f.store.Agent("ada").Archival().Get(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(art, `<li id="source-`+id+"-"+itoa(src)+`"`) || !strings.Contains(art, template.HTMLEscapeString(e.Content)) {
				t.Errorf("merge proposal %s lacks source %d %q: %s", id, src, e.Content, art)
			}
		}
		if !strings.Contains(art, template.HTMLEscapeString(p.Merge.Content)) {
			t.Errorf("merge proposal %s lacks the merged text %q", id, p.Merge.Content)
		}
		if strings.Contains(art, `class="error"`) {
			t.Errorf("merge proposal %s shows an error: %s", id, art)
		}
	}
	res, _ := f.post(t, "/proposals/"+itoa(ps[0].ID)+"/approve", url.Values{"csrf": {f.csrf}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: status %d", res.StatusCode)
	}
	if p := f.proposal(t, ps[0].ID); p.Status != "approved" || p.DecidedBy != "human:tester" {
		t.Fatalf("after approve: %+v", p)
	}
	for _, src := range ps[0].Merge.Sources {
		e, err := f.store.Agent("ada").Archival().Get(context.Background(), src)
		if err != nil || e.SupersededBy == 0 {
			t.Fatalf("source %d after approve: %+v, %v; want superseded", src, e, err)
		}
	}
	res, _ = f.post(t, "/proposals/"+itoa(ps[1].ID)+"/reject", url.Values{"csrf": {f.csrf}, "reason": {"keep both"}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("reject: status %d", res.StatusCode)
	}
	if p := f.proposal(t, ps[1].ID); p.Status != "rejected" {
		t.Fatalf("after reject: %+v", p)
	}
	_, body = f.get(t, "/proposals")
	for _, p := range ps {
		row := between(body, `<tr id="decided-`+itoa(p.ID)+`"`, "</tr>")
		if !strings.Contains(row, "merge of 2 archival entries of ada") {
			t.Errorf("decided row of %d: %q", p.ID, row)
		}
	}
}

// between is the part of s from the first start to the end that follows.
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j+len(end)]
}
