package searchindex_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestOpenAIWithIndex runs PutVectors and a vector search through the HTTP
// embedder end to end.
func TestOpenAIWithIndex(t *testing.T) {
	// Each input's vector is [len(input), index+1, 1, 1].
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i, in := range req.Input {
			data = append(data, item{i, []float32{float32(len(in)), float32(i + 1), 1, 1}})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	t.Cleanup(srv.Close)
	e, err := search.NewOpenAI(&search.OpenAIOptions{BaseURL: srv.URL + "/v1", Model: "test-model", Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := openDB(t)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := insertArchival(t, db, archivalRow{Agent: "a", Content: "abc"})
	if err := x.PutVectors(ctx, db, search.Archival, []searchindex.VectorItem{{ID: id, Owner: "a", Text: "abc"}}); err != nil {
		t.Fatal(err)
	}
	rs, err := x.Search(ctx, "xyz", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Vector))
	if err != nil || len(rs) != 1 || rs[0].ID != id {
		t.Fatal(rs, err)
	}
}
