package compress_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

// fakeModel answers every chat completion with reply (a function of the
// request's user message), or misbehaves as told.
func fakeModel(t *testing.T, reply func(user string) string, delay time.Duration, status int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string }
		}
		json.NewDecoder(r.Body).Decode(&req)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if status != 0 {
			w.WriteHeader(status)
			return
		}
		user := req.Messages[len(req.Messages)-1].Content
		out, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": reply(user)}, "finish_reason": "stop"}}})
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const (
	factOld = "Caroline moved to Boston in May 2021 with her two dogs"
	factNew = "Caroline moved to Boston in May 2021 with her two dogs and cat"
)

func consolidationStore(t *testing.T) (*memory.Store, []memory.ArchivalEntry) {
	t.Helper()
	s, err := memory.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var out []memory.ArchivalEntry
	for _, c := range []string{factOld, "Melanie paints landscapes on weekends", factNew} {
		e, err := s.Agent("ag").Archival().Insert(context.Background(), memory.ArchivalEntry{Content: c, Tags: []string{"t" + fmt.Sprint(len(out))}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return s, out
}

func snapshot(t *testing.T, s *memory.Store) string {
	t.Helper()
	es, err := s.Agent("ag").Archival().List(context.Background(), &memory.ArchivalQuery{IncludeSuperseded: true})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := s.Agent("ag").Proposals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%+v %d", es, len(ps))
}

func TestConsolidatorBadAnswersChangeNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		reply  string
		delay  time.Duration
		status int
	}{
		{name: "not json", reply: "Sure! I think they are the same."},
		{name: "malformed json", reply: `{"action": "merge", "content": `},
		{name: "unknown field", reply: `{"action": "merge", "content": "x", "delete": [1]}`},
		{name: "unknown action", reply: `{"action": "delete_all", "reason": "tidy"}`},
		{name: "empty merge", reply: `{"action": "merge", "content": "  "}`},
		{name: "keep outside cluster", reply: `{"action": "supersede", "keep": 2}`},
		{name: "keep not a number", reply: `{"action": "supersede", "keep": "the first"}`},
		{name: "huge merge", reply: `{"action": "merge", "content": "` + strings.Repeat("a", 2<<20) + `"}`},
		{name: "timeout", reply: `{"action": "keep"}`, delay: 5 * time.Second},
		{name: "server error", status: http.StatusInternalServerError},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, es := consolidationStore(t)
			srv := fakeModel(t, func(string) string { return c.reply }, c.delay, c.status)
			model, err := compress.NewOpenAIConsolidator(&compress.OpenAIOptions{BaseURL: srv.URL, APIKey: "k", Model: "fake", Timeout: 300 * time.Millisecond, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, s)
			rep, err := s.Agent("ag").Archival().Consolidate(context.Background(), &memory.ConsolidateOptions{Model: model, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Clusters) != 1 {
				t.Fatalf("%d clusters, want 1", len(rep.Clusters))
			}
			// Not a dry run: the cluster is proposed without the model's
			// answer (the oldest text), which stays pending.
			rep, err = s.Agent("ag").Archival().Consolidate(context.Background(), &memory.ConsolidateOptions{Model: model})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.ModelErrors) != 1 {
				t.Fatalf("model errors %q, want 1", rep.ModelErrors)
			}
			if m := rep.Clusters[0].Merge; m.Model != "" || m.Content != factOld {
				t.Fatalf("a refused answer shaped the proposal: %+v", m)
			}
			if snapshot(t, s) == before {
				t.Fatal("no proposal recorded")
			}
			es2, _ := s.Agent("ag").Archival().List(context.Background(), nil)
			if len(es2) != len(es) {
				t.Fatalf("%d live entries, want %d", len(es2), len(es))
			}
		})
	}
}

func TestConsolidatorMergeApproveReject(t *testing.T) {
	ctx := context.Background()
	s, es := consolidationStore(t)
	var seen string
	srv := fakeModel(t, func(user string) string {
		seen = user
		return "```json\n" + `{"action": "merge", "content": "Caroline moved to Boston in May 2021 with two dogs and a cat.", "reason": "same move"}` + "\n```"
	}, 0, 0)
	model, err := compress.NewOpenAIConsolidator(&compress.OpenAIOptions{BaseURL: srv.URL, Model: "fake-1", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Agent("ag").Archival().Consolidate(ctx, &memory.ConsolidateOptions{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(seen, fmt.Sprintf("[id %d]", es[0].ID)) {
		t.Fatalf("the model was not shown the entries: %q", seen)
	}
	if len(rep.Proposals) != 1 {
		t.Fatalf("proposals %v, report %+v", rep.Proposals, rep)
	}
	ps, _ := s.Agent("ag").Proposals(ctx)
	p := ps[0]
	if p.Merge == nil || p.Merge.Model != "fake-1" || p.Reason != "same move" || !slices.Equal(p.Merge.Sources, []int64{es[0].ID, es[2].ID}) || p.Merge.Similarity <= 0.8 {
		t.Fatalf("proposal %+v merge %+v", p, p.Merge)
	}
	// Another agent may not decide it.
	if err := s.Agent("mallory").ApproveProposal(ctx, p.ID); err == nil {
		t.Fatal("another agent approved a merge of ag's memory")
	}
	if err := s.Agent("human:ann").ApproveProposal(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	live, _ := s.Agent("ag").Archival().List(ctx, nil)
	if len(live) != 2 {
		t.Fatalf("%d live entries after the merge, want 2", len(live))
	}
	merged := live[0]
	if merged.Content != p.Merge.Content || !slices.Equal(merged.Tags, []string{"t0", "t2"}) || fmt.Sprint(merged.Metadata["derived_from"]) != fmt.Sprint([]any{float64(es[0].ID), float64(es[2].ID)}) {
		t.Fatalf("merged entry %+v", merged)
	}
	for _, src := range []int64{es[0].ID, es[2].ID} {
		old, _ := s.Agent("ag").Archival().Get(ctx, src)
		if old.ValidTo == nil || old.SupersededBy != merged.ID {
			t.Fatalf("source %d: %+v", src, old)
		}
	}
	// Approving twice fails; a stale proposal (a source superseded since)
	// fails and changes nothing.
	if err := s.Agent("human:ann").ApproveProposal(ctx, p.ID); err == nil {
		t.Fatal("approved twice")
	}
	s2, es2 := consolidationStore(t)
	if _, err := s2.Agent("ag").Archival().Consolidate(ctx, &memory.ConsolidateOptions{Model: model}); err != nil {
		t.Fatal(err)
	}
	ps2, _ := s2.Agent("ag").Proposals(ctx)
	if _, err := s2.Agent("ag").Archival().Supersede(ctx, es2[2].ID, memory.ArchivalEntry{Content: "Caroline lives in Boston"}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, s2)
	if err := s2.Agent("ag").ApproveProposal(ctx, ps2[0].ID); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("stale merge: %v, want ErrNotFound", err)
	}
	if snapshot(t, s2) != before {
		t.Fatal("a failed approval changed memory")
	}
	if err := s2.Agent("ag").RejectProposal(ctx, ps2[0].ID, "no"); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, s2)
	if after != before {
		t.Fatalf("rejecting changed memory")
	}
}
