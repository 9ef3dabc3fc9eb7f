package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/tools"
)

type searchOut struct {
	Count   int    `json:"count"`
	Note    string `json:"note"`
	Results []struct {
		ID          int64           `json:"id"`
		Role        string          `json:"role"`
		Created     string          `json:"created"`
		Tags        []string        `json:"tags"`
		Snippet     string          `json:"snippet"`
		Content     string          `json:"content"`
		Metadata    json.RawMessage `json:"metadata"`
		Score       float64         `json:"score"`
		RankedBy    string          `json:"ranked_by"`
		ScoreSource struct {
			FTSRank int     `json:"fts_rank"`
			BM25    float64 `json:"bm25"`
		} `json:"score_source"`
	} `json:"results"`
}

func decodeSearch(t *testing.T, res tools.Result) searchOut {
	t.Helper()
	if res.IsError {
		t.Fatalf("search failed: %s", res.Content)
	}
	var out searchOut
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatalf("search result is not JSON: %v\n%s", err, res.Content)
	}
	if out.Count != len(out.Results) {
		t.Fatalf("count %d, %d results", out.Count, len(out.Results))
	}
	return out
}

func ids(out searchOut) []int64 {
	var r []int64
	for _, x := range out.Results {
		r = append(r, x.ID)
	}
	return r
}

// searchFixture adds alice's archival entries and messages (and bob's).
func searchFixture(t *testing.T, st *memory.Store) (tea, deadline, long int64) {
	t.Helper()
	ctx := context.Background()
	ins := func(agent, content string, tags []string, at time.Time) int64 {
		e, err := st.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: content, Tags: tags, CreatedAt: at,
			Metadata: map[string]any{"source": "test"}})

		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	tea = ins("alice", "Sam prefers green tea in the morning", []string{"prefs"}, epoch.Add(-48*time.Hour))
	deadline = ins("alice", "The project deadline is Friday", []string{"work"}, epoch.Add(-time.Hour))
	long = ins("alice", "Oolong notes: "+strings.Repeat("leaves roll slowly in hot water. ", 60), []string{"prefs"}, epoch.Add(-time.Hour))
	ins("bob", "bob keeps a tea diary", nil, epoch.Add(-time.Hour))
	// The month-old message is of another conversation (batch): messages
	// are indexed with their batch neighbours' words, which these filter
	// tests must not meet.
	msg := func(agent string, role memory.Role, content, batch string, at time.Time) {
		if _, err := st.Agent(agent).Messages().Append(ctx, memory.Message{Role: role, Content: content, BatchID: batch, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	msg("alice", memory.RoleUser, "I love jasmine tea", "b1", epoch.Add(-2*time.Hour))
	msg("alice", memory.RoleAssistant, "Noted: jasmine it is", "b1", epoch.Add(-2*time.Hour+time.Minute))
	msg("alice", memory.RoleUser, "What about the deadline?", "b0", epoch.Add(-30*24*time.Hour))
	msg("bob", memory.RoleUser, "jasmine for bob too", "b1", epoch.Add(-time.Hour))
	return tea, deadline, long
}

func TestArchivalSearch(t *testing.T) {
	st := openStore(t, nil)
	tea, deadline, long := searchFixture(t, st)
	ts := newToolset(t, st, "alice", nil)

	out := decodeSearch(t, call(t, ts, "archival_search", `{"query":"green tea"}`))
	if len(out.Results) == 0 || out.Results[0].ID != tea {
		t.Fatalf("tea search: %+v", out)
	}
	r := out.Results[0]
	if !strings.Contains(r.Snippet, "«tea»") || r.Score <= 0 || r.RankedBy != "fts" || r.ScoreSource.FTSRank != 1 || r.ScoreSource.BM25 >= 0 ||
		r.Created != "2025-02-27T12:00:00Z" || len(r.Tags) != 1 || r.Tags[0] != "prefs" || string(r.Metadata) != `{"source":"test"}` {
		t.Errorf("tea hit %+v", r)
	}
	if r.Content != "" {
		t.Errorf("content repeated although the snippet shows it all: %q", r.Content)
	}
	for _, x := range out.Results {
		if strings.Contains(x.Snippet, "bob") || strings.Contains(x.Snippet, "jasmine") {
			t.Errorf("search leaked another agent's entry or a message: %+v", x)
		}
	}

	// Long content: the snippet is a passage, the content is cut to 1000
	// characters.
	out = decodeSearch(t, call(t, ts, "archival_search", `{"query":"oolong"}`))
	if len(out.Results) != 1 || out.Results[0].ID != long {
		t.Fatalf("oolong: %+v", out)
	}
	if c := out.Results[0].Content; len([]rune(c)) != 1001 || !strings.HasSuffix(c, "…") {
		t.Errorf("long content has %d runes: %q", len([]rune(c)), c)
	}

	// Tags (any), time range, limit.
	if got := ids(decodeSearch(t, call(t, ts, "archival_search", `{"query":"deadline","tags":["work","x"]}`))); len(got) != 1 || got[0] != deadline {
		t.Errorf("tag filter: %v", got)
	}
	out = decodeSearch(t, call(t, ts, "archival_search", `{"query":"deadline","tags":["prefs"]}`))
	if out.Count != 0 || out.Note == "" || string(mustJSON(t, out.Results)) != "[]" {
		t.Errorf("excluded by tags: %+v", out)
	}
	if got := ids(decodeSearch(t, call(t, ts, "archival_search", `{"query":"tea","since":"24h"}`))); len(got) != 0 {
		t.Errorf("since 24h: %v", got)
	}
	if got := ids(decodeSearch(t, call(t, ts, "archival_search", `{"query":"tea","since":"3d"}`))); len(got) != 1 {
		t.Errorf("since 3d: %v", got)
	}
	if got := ids(decodeSearch(t, call(t, ts, "archival_search", `{"query":"tea deadline","until":"2025-02-28"}`))); len(got) != 1 || got[0] != tea {
		t.Errorf("until a date: %v", got)
	}
	if got := ids(decodeSearch(t, call(t, ts, "archival_search", `{"query":"tea deadline","since":"2025-02-28T00:00:00Z","until":"2025-03-02"}`))); len(got) != 1 || got[0] != deadline {
		t.Errorf("since/until RFC 3339: %v", got)
	}
	if got := ids(decodeSearch(t, call(t, ts, "archival_search", `{"query":"tea deadline oolong","limit":1,"mode":"fts"}`))); len(got) != 1 {
		t.Errorf("limit 1: %v", got)
	}
	if got := ids(decodeSearch(t, call(t, ts, "archival_search", `{"query":"diary"}`))); len(got) != 0 {
		t.Errorf("found bob's entry: %v", got)
	}

	// Deterministic.
	a := call(t, ts, "archival_search", `{"query":"tea deadline oolong"}`)
	b := call(t, ts, "archival_search", `{"query":"tea deadline oolong"}`)
	if a != b {
		t.Errorf("not deterministic:\n%s\n%s", a.Content, b.Content)
	}

	before := snapshot(t, st)
	for _, tc := range []struct{ args, want string }{
		{`{"query":"tea","mode":"vector"}`, "not available here; use mode fts or auto"},
		{`{"query":"tea","mode":"hybrid"}`, "not available here"},
		{`{"query":"tea","mode":"psychic"}`, `mode "psychic" is not one of auto, fts, vector, hybrid`},
		{`{"query":"tea","limit":51}`, "limit 51 is out of range; use 1 to 50"},
		{`{"query":"tea","limit":-1}`, "limit -1 is out of range"},
		{`{"query":"tea","limit":"ten"}`, `argument "limit" must be an integer, got string`},
		{`{"query":"tea","since":"yesterday"}`, `since "yesterday" is not a time`},
		{`{"query":"tea","until":"soon"}`, `until "soon" is not a time`},
		{`{"query":"tea","since":"2025-03-01","until":"2025-02-01"}`, "until (2025-02-02T00:00:00Z) must be after since (2025-03-01T00:00:00Z)"},
		{`{"query":""}`, "query is empty"},
		{`{"query":"!!! ???"}`, "query has nothing to search for"},
		{`{"query":"tea","tags":"prefs"}`, `argument "tags" must be an array of strings`},
		{`{"tags":["prefs"]}`, `missing required argument "query"`},
		{`{"query":"tea","role":"user"}`, `unknown argument "role"`},
	} {
		res := call(t, ts, "archival_search", tc.args)
		if !res.IsError || !strings.Contains(res.Content, tc.want) {
			t.Errorf("archival_search(%s) = %+v, want error with %q", tc.args, res, tc.want)
		}
	}
	if after := snapshot(t, st); after != before {
		t.Errorf("failed searches changed the store")
	}
}

func TestConversationSearch(t *testing.T) {
	st := openStore(t, nil)
	searchFixture(t, st)
	ts := newToolset(t, st, "alice", nil)

	out := decodeSearch(t, call(t, ts, "conversation_search", `{"query":"jasmine tea"}`))
	if out.Count != 2 {
		t.Fatalf("want alice's 2 jasmine messages, got %+v", out)
	}
	roles := map[string]bool{}
	for _, r := range out.Results {
		roles[r.Role] = true
		if strings.Contains(r.Snippet, "bob") || strings.Contains(r.Snippet, "green") || len(r.Tags) != 0 {
			t.Errorf("not one of alice's messages: %+v", r)
		}
	}
	if !roles["user"] || !roles["assistant"] {
		t.Errorf("roles %v", roles)
	}
	if got := decodeSearch(t, call(t, ts, "conversation_search", `{"query":"deadline"}`)); got.Count != 1 || got.Results[0].Created != "2025-01-30T12:00:00Z" {
		t.Errorf("deadline message: %+v", got)
	}
	if got := decodeSearch(t, call(t, ts, "conversation_search", `{"query":"deadline","since":"7d"}`)); got.Count != 0 || got.Note == "" {
		t.Errorf("since 7d: %+v", got)
	}
	if got := decodeSearch(t, call(t, ts, "conversation_search", `{"query":"jasmine","until":"2025-03-01T10:00:30Z","limit":5}`)); got.Count != 1 {
		t.Errorf("until: %+v", got)
	}
	for _, tc := range []struct{ args, want string }{
		{`{"query":"x","mode":"vector"}`, "not available"},
		{`{"query":"x","limit":0.5}`, `argument "limit" must be an integer`},
		{`{"query":"x","tags":["a"]}`, `unknown argument "tags"`},
		{`{}`, `missing required argument "query"`},
	} {
		res := call(t, ts, "conversation_search", tc.args)
		if !res.IsError || !strings.Contains(res.Content, tc.want) {
			t.Errorf("conversation_search(%s) = %+v, want error with %q", tc.args, res, tc.want)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reverseReranker scores later candidates higher.
type reverseReranker struct{}

func (reverseReranker) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	out := make([]float64, len(docs))
	for i := range docs {
		out[i] = float64(i)
	}
	return out, nil
}

// A store with a Reranker (memory.Options.Reranker): each hit's score is
// the reranker's, and ranked_by must say so; it said "fts" for an order
// and a score full-text ranking had no part in.
func TestSearchRankedByReranker(t *testing.T) {
	st := openStore(t, &memory.Options{Reranker: reverseReranker{}})
	searchFixture(t, st)
	ts := newToolset(t, st, "alice", nil)
	for _, tool := range []string{"archival_search", "conversation_search"} {
		out := decodeSearch(t, call(t, ts, tool, `{"query":"tea"}`))
		if len(out.Results) == 0 {
			t.Fatalf("%s: no results", tool)
		}
		for _, r := range out.Results {
			if r.RankedBy != "rerank" {
				t.Errorf("%s: hit %d (score %v) ranked_by %q, want rerank", tool, r.ID, r.Score, r.RankedBy)
			}
		}
	}
}
