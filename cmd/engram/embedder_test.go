package main

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

// clearEmbedEnv empties every variable the embedders read, so the
// developer's environment cannot change a test.
func clearEmbedEnv(t *testing.T) {
	for _, v := range []string{"ENGRAM_EMBEDDER", envBaseURL, envBaseURL2, envKey, envKey2, "ENGRAM_EMBED_MODEL", "ENGRAM_EMBED_DIMS"} {
		t.Setenv(v, "")
	}
}

// fakeEmbeddings is an OpenAI-compatible /embeddings endpoint: 8-dimension
// vectors from a hash of each word; with key set it answers 401 to any
// other bearer.
func fakeEmbeddings(t *testing.T, key string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`))
			return
		}
		var req struct{ Input []string }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []datum `json:"data"`
		}
		for i, text := range req.Input {
			v := make([]float32, 8)
			v[0] = 0.01
			for _, w := range strings.Fields(strings.ToLower(text)) {
				h := fnv.New32a()
				h.Write([]byte(w))
				v[h.Sum32()%8]++
			}
			out.Data = append(out.Data, datum{i, v})
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Vector and hybrid search use the embedder the store
// records, without --embedder; --embedder none still means none.
func TestCLIRecordedOfflineEmbedder(t *testing.T) {
	clearEmbedEnv(t)
	db := filepath.Join(t.TempDir(), "o.db")
	ok(t, db, "--embedder", "offline", "archival", "add", "--agent", "ada", "The analytical engine was designed in 1837.")
	if out := ok(t, db, "stats"); !strings.Contains(out, "offline-hash-v1/384") {
		t.Fatalf("stats does not show the recorded embedder:\n%s", out)
	}
	for _, mode := range []string{"vector", "hybrid"} {
		out := ok(t, db, "search", "--agent", "ada", "--mode", mode, "analytical engine")
		if !strings.Contains(out, "vec#1") || !strings.Contains(out, "archival") {
			t.Errorf("search --mode %s without --embedder:\n%s", mode, out)
		}
	}
	// Content added without --embedder gets its vector from the recorded
	// embedder: a vector search finds it.
	ok(t, db, "archival", "add", "--agent", "ada", "Babbage never finished the difference engine.")
	if out := ok(t, db, "search", "--agent", "ada", "--mode", "vector", "--limit", "1", "Babbage difference"); !strings.Contains(out, "Babbage") {
		t.Errorf("an entry added without --embedder is not found by vector:\n%s", out)
	}
	_, errs, code := cli(t, db, "", "--embedder", "none", "search", "--agent", "ada", "--mode", "vector", "engine")
	if code != 1 || !strings.Contains(errs, "no embedder configured") {
		t.Errorf("--embedder none search --mode vector: exit %d, %q", code, errs)
	}
}

// A store whose vectors come from an OpenAI-compatible model uses
// it when the environment says where; without, a vector search names the
// variables to set, other commands run (a write warns).
func TestCLIRecordedOpenAIEmbedder(t *testing.T) {
	clearEmbedEnv(t)
	srv := fakeEmbeddings(t, "")
	db := filepath.Join(t.TempDir(), "oa.db")
	t.Setenv(envBaseURL, srv.URL)
	t.Setenv("ENGRAM_EMBED_MODEL", "fake-embed")
	t.Setenv("ENGRAM_EMBED_DIMS", "8")
	ok(t, db, "--embedder", "openai", "archival", "add", "--agent", "ada", "trains run on rails")
	t.Setenv("ENGRAM_EMBED_MODEL", "")
	t.Setenv("ENGRAM_EMBED_DIMS", "")
	// The model and its size come from the store's record.
	if out := ok(t, db, "search", "--agent", "ada", "--mode", "vector", "rails"); !strings.Contains(out, "vec#1") {
		t.Fatalf("vector search with the recorded fake-embed/8:\n%s", out)
	}

	t.Setenv(envBaseURL, "")
	start := time.Now()
	_, errs, code := cli(t, db, "", "search", "--agent", "ada", "--mode", "hybrid", "rails")
	if code != 1 || !strings.Contains(errs, "fake-embed/8") || !strings.Contains(errs, envKey) || !strings.Contains(errs, envBaseURL) {
		t.Fatalf("hybrid search without the embedder's environment: exit %d, stderr %q", code, errs)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the missing configuration took %v to report", d)
	}
	// Reading needs no vectors; FTS works; a write says its content gets none.
	ok(t, db, "archival", "list", "--agent", "ada")
	if out := ok(t, db, "search", "--agent", "ada", "--mode", "fts", "rails"); !strings.Contains(out, "rails") {
		t.Errorf("fts search:\n%s", out)
	}
	_, errs, code = cli(t, db, "", "archival", "add", "--agent", "ada", "boats float")
	if code != 0 || !strings.Contains(errs, "warning") || !strings.Contains(errs, "no vectors") {
		t.Errorf("a write without the recorded embedder: exit %d, stderr %q", code, errs)
	}
	// A store whose vectors are from an OpenAI model names the key.
	s, err := memory.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = storeaccess.Backend(s).DB().Exec(`UPDATE meta SET value = 'text-embedding-3-small/8' WHERE key = 'embedder.name'`)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, errs, _ = cli(t, db, "", "search", "--agent", "ada", "--mode", "vector", "rails")
	if !strings.Contains(errs, "text-embedding-3-small is an OpenAI model") || !strings.Contains(errs, envKey+" (or "+envKey2+") is not set") {
		t.Errorf("OpenAI model without a key: %q", errs)
	}
	// An OpenAI base URL without a key names the key's variable.
	t.Setenv(envBaseURL, "https://api.openai.com/v1")
	_, errs, _ = cli(t, db, "", "search", "--agent", "ada", "--mode", "vector", "rails")
	if !strings.Contains(errs, envKey+" (or "+envKey2+") is not set") {
		t.Errorf("OpenAI URL without a key: %q", errs)
	}
}

// --embedder openai without a key or a base URL fails at once,
// naming what to set; a rejected key and a server nothing listens at are
// different errors, and the second is not retried for seconds.
func TestCLIOpenAIEmbedderErrors(t *testing.T) {
	clearEmbedEnv(t)
	db := filepath.Join(t.TempDir(), "e.db")
	ok(t, db, "archival", "add", "--agent", "ada", "trains run on rails")

	start := time.Now()
	_, errs, code := cli(t, db, "", "--embedder", "openai", "search", "--agent", "ada", "--mode", "vector", "rails")
	if code != 1 || !strings.Contains(errs, "--embedder openai") || !strings.Contains(errs, envKey) || !strings.Contains(errs, envBaseURL) {
		t.Fatalf("--embedder openai with nothing set: exit %d, stderr %q", code, errs)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}

	t.Setenv("ENGRAM_EMBED_MODEL", "fake-embed")
	t.Setenv("ENGRAM_EMBED_DIMS", "8")
	// 401: the key is named.
	srv := fakeEmbeddings(t, "right-key")
	t.Setenv(envBaseURL, srv.URL)
	t.Setenv(envKey, "wrong-key")
	_, errs, code = cli(t, db, "", "--embedder", "openai", "search", "--agent", "ada", "--mode", "vector", "rails")
	if code != 1 || !strings.Contains(errs, "HTTP 401") || !strings.Contains(errs, "refused the request's API key") ||
		!strings.Contains(errs, "check "+envKey) || strings.Contains(errs, "wrong-key") || strings.Contains(errs, "unreachable") {
		t.Fatalf("401: exit %d, stderr %q", code, errs)
	}

	// Connection refused: at once, and not a key problem.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	t.Setenv(envBaseURL, dead.URL)
	start = time.Now()
	_, errs, code = cli(t, db, "", "--embedder", "openai", "search", "--agent", "ada", "--mode", "vector", "rails")
	if code != 1 || !strings.Contains(errs, "unreachable") || !strings.Contains(errs, "connection refused") ||
		!strings.Contains(errs, envBaseURL) || strings.Contains(errs, "HTTP 401") {
		t.Fatalf("connection refused: exit %d, stderr %q", code, errs)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("an unreachable server took %v to report (retried?)", d)
	}
}

// A pending proposal, the context library's
// artifacts and the embedder record survive export and import into a new
// store, whose vectors the dump's embedder then computes.
func TestCLIExportImportKeepsProposalsAndEmbedder(t *testing.T) {
	clearEmbedEnv(t)
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
	ok(t, src, "--embedder", "offline", "block", "create", "--agent", "ada", "--label", "persona", "--perm", "Partner", "--value", "I am Ada.")
	ok(t, src, "archival", "add", "--agent", "ada", "The analytical engine was designed in 1837.")
	if out := ok(t, src, "block", "append", "--agent", "ada", "--as-agent", "persona", " I like tea."); !strings.Contains(out, "proposal #1") {
		t.Fatalf("append: %s", out)
	}
	dump := filepath.Join(dir, "dump.json")
	ok(t, src, "export", "--out", dump)
	out, errs, code := cli(t, dst, "", "import", "--in", dump)
	if code != 0 || !strings.Contains(out, "1 proposals") || !strings.Contains(errs, "offline-hash-v1/384") {
		t.Fatalf("import: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if out := ok(t, dst, "proposals", "list"); !strings.Contains(out, "I like tea") && !strings.Contains(out, "append_text") {
		t.Fatalf("the pending proposal did not survive:\n%s", out)
	}
	ok(t, dst, "proposals", "approve", "--as", "carol", "1")
	if out := ok(t, dst, "block", "show", "--agent", "ada", "persona"); !strings.Contains(out, "I am Ada. I like tea.") {
		t.Fatalf("approved imported proposal:\n%s", out)
	}
	if out := ok(t, dst, "stats"); !strings.Contains(out, "offline-hash-v1/384") {
		t.Fatalf("the embedder record did not come back:\n%s", out)
	}
	if out := ok(t, dst, "search", "--agent", "ada", "--mode", "vector", "analytical engine"); !strings.Contains(out, "vec#1") {
		t.Fatalf("vector search after the import:\n%s", out)
	}
}

// engram mcp searches by vector with the store's recorded
// embedder, and refuses to start, naming the variables, when it cannot
// rebuild it.
func TestCLIMCPUsesRecordedEmbedder(t *testing.T) {
	clearEmbedEnv(t)
	db := filepath.Join(t.TempDir(), "m.db")
	ok(t, db, "--embedder", "offline", "archival", "add", "--agent", "ada", "The analytical engine was designed in 1837.")
	input := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"archival_search","arguments":{"query":"analytical engine","mode":"vector"}}}`,
	}, "\n") + "\n"
	out, errs, code := cli(t, db, input, "mcp", "--agent", "ada")
	if code != 0 || !strings.Contains(out, "1837") || strings.Contains(out, "not available") {
		t.Fatalf("engram mcp vector search: exit %d, stdout %s, stderr %s", code, out, errs)
	}

	srv := fakeEmbeddings(t, "")
	oa := filepath.Join(t.TempDir(), "oa.db")
	t.Setenv(envBaseURL, srv.URL)
	t.Setenv("ENGRAM_EMBED_MODEL", "fake-embed")
	t.Setenv("ENGRAM_EMBED_DIMS", "8")
	ok(t, oa, "--embedder", "openai", "archival", "add", "--agent", "ada", "trains run on rails")
	clearEmbedEnv(t)
	_, errs, code = cli(t, oa, input, "mcp", "--agent", "ada")
	if code != 1 || !strings.Contains(errs, "fake-embed/8") || !strings.Contains(errs, envKey) || !strings.Contains(errs, "--embedder none") {
		t.Fatalf("engram mcp without the recorded embedder's environment: exit %d, stderr %q", code, errs)
	}
}

// A dump edited to record offline-hash-v1/N with N out of range is an
// embedder the CLI cannot rebuild (the import warns and keeps the
// content), not an offline embedder of N dimensions.
func TestEmbedderNamedDimensionBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		dims int
		ok   bool
	}{
		{"offline-hash-v1/384", 384, true},
		{"offline-hash-v1/8192", 8192, true},
		{"offline-hash-v1/8193", 8193, false},
		{"offline-hash-v1/2000000000", 2_000_000_000, false},
		{"offline-hash-v1/0", 0, false},
		{"offline-hash-v1/-3", -3, false},
	} {
		e, err := embedderNamed(tc.name, tc.dims)
		if tc.ok != (err == nil) {
			t.Errorf("%s: err %v, want ok %v", tc.name, err, tc.ok)
		}
		if !tc.ok && !errors.Is(err, errEmbedderUnavailable) {
			t.Errorf("%s: err %v, want errEmbedderUnavailable", tc.name, err)
		}
		if tc.ok && e.Dimensions() != tc.dims {
			t.Errorf("%s: %d dimensions", tc.name, e.Dimensions())
		}
	}
}
