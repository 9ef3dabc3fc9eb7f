package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// FuzzServeRequest sends arbitrary bodies and header values to serve's
// handler: it never fails with a 500 or a panic, and a request without a
// valid token is refused (401, or 403 for a foreign Origin) and changes
// nothing.
func FuzzServeRequest(f *testing.F) {
	ctx := context.Background()
	store, err := memory.Open(ctx, filepath.Join(f.TempDir(), "fuzz.db"), nil)
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start"})
	_, rw, _ := accesstoken.Of(store).Create(ctx, accesstoken.Spec{Agent: "ada"})
	_, ro, _ := accesstoken.Of(store).Create(ctx, accesstoken.Spec{Agent: "ada", ReadOnly: true})
	h, err := newServeHandler(store, &serveConfig{opts: serve.Options{Rate: 1e9, Burst: 1 << 30, MaxSessions: 1 << 20, AuthFailureBurst: 1 << 30, AuthFailureGlobalBurst: 1 << 30}},
		slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	defer h.Shutdown(ctx)

	for _, body := range []string{
		initializeBody,
		appendCall("notes", "", "fuzz"),
		`[` + initializeBody + `]`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"engram://ada/notes"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		``, `null`, `{`, "\x00\xff",
	} {
		for auth := range uint8(4) {
			f.Add("POST", "/mcp", auth, "", "application/json", []byte(body))
		}
	}
	f.Add("GET", "/mcp", uint8(1), "http://evil.example", "", []byte(nil))
	f.Add("DELETE", "/mcp", uint8(1), "", "", []byte(nil))
	f.Add("GET", "/ui/login", uint8(0), "engram_x", "", []byte(nil))
	f.Add("POST", "/ui/login", uint8(0), "", "application/x-www-form-urlencoded", []byte("token=engram_x"))
	f.Add("GET", "/healthz", uint8(0), "", "", []byte(nil))
	f.Add("GET", "/readyz", uint8(0), "", "", []byte(nil))

	f.Fuzz(func(t *testing.T, method, path string, auth uint8, value, contentType string, body []byte) {
		switch method {
		case "GET", "POST", "DELETE", "PUT", "OPTIONS", "HEAD":
		default:
			method = "POST"
		}
		if path == "" || path[0] != '/' {
			path = "/mcp"
		}
		r, err := http.NewRequest(method, "http://127.0.0.1:8421"+path, bytes.NewReader(body))
		if err != nil {
			return // not a URL a client could send
		}
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("Accept", "application/json, text/event-stream")
		valid := false
		switch auth % 4 {
		case 1:
			r.Header.Set("Authorization", "Bearer "+rw)
			valid = true
		case 2:
			r.Header.Set("Authorization", "Bearer "+ro)
			valid = true
		case 3:
			r.Header.Set("Authorization", "Bearer "+value)
		}
		switch auth / 4 % 4 {
		case 1:
			r.Header.Set("Origin", value)
		case 2:
			r.Header.Set("Mcp-Session-Id", value)
		case 3:
			r.Header.Set("Mcp-Protocol-Version", value)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r.WithContext(rctx))
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		if !valid && path == "/mcp" && w.Code != http.StatusUnauthorized && w.Code != http.StatusForbidden {
			t.Fatalf("%s /mcp without a valid token: %d %s", method, w.Code, w.Body)
		}
		if !valid || auth%4 == 2 {
			if got, _ := store.Agent("ada").Block("notes").Render(ctx); got != "start" {
				t.Fatalf("a request without a writing token changed the block: %q", got)
			}
		}
	})
}
