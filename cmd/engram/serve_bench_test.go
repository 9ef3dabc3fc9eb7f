package main

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// BenchmarkMCPToolCall times one tool call (archival_search, then
// archival_insert) through the go-sdk client over stdio framing (engram mcp's
// transport, on in-process pipes) and over HTTP (engram serve's handler
// on a loopback server), and reports p50 and p95 besides ns/op.
func BenchmarkMCPToolCall(b *testing.B) {
	ctx := context.Background()
	for _, tool := range []string{"archival_search", "archival_insert"} {
		for _, via := range []string{"stdio", "http"} {
			b.Run(tool+"/"+via, func(b *testing.B) {
				store, err := memory.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer store.Close()
				store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Type: blocks.Core, Value: "Likes tea.", CharLimit: 1 << 22})
				for i := range 200 {
					store.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: "note about tea number " + string(rune('a'+i%26))})
				}
				var cs *mcp.ClientSession
				if via == "stdio" {
					cs = stdioSession(b, ctx, store)
				} else {
					cs = httpSession(b, ctx, store)
				}
				defer cs.Close()
				args := map[string]any{"query": "tea"}
				if tool == "archival_insert" {
					args = map[string]any{"content": "another note about tea"}
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for b.Loop() {
					start := time.Now()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
					if err != nil || res.IsError {
						b.Fatalf("%s: %v %+v", tool, err, res)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds()), "p95-µs")
			})
		}
	}
}

// BenchmarkServeSessions opens and closes MCP sessions over HTTP
// (initialize, initialized, DELETE) one after another.
func BenchmarkServeSessions(b *testing.B) {
	ctx := context.Background()
	store, err := memory.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	_, secret, _ := accesstoken.Of(store).Create(ctx, accesstoken.Spec{Agent: "ada"})
	c := &serveConfig{}
	c.opts.Rate, c.opts.Burst = 1e9, 1<<30
	h, err := newServeHandler(store, c, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Shutdown(ctx)
	start := time.Now()
	for b.Loop() {
		cs, err := connectMCP(ctx, srv.URL, secret)
		if err != nil {
			b.Fatal(err)
		}
		cs.Close()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sessions/s")
}

func stdioSession(b *testing.B, ctx context.Context, store *memory.Store) *mcp.ClientSession {
	srv, err := newMCPServer(store, "ada")
	if err != nil {
		b.Fatal(err)
	}
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	sctx, cancel := context.WithCancel(ctx)
	b.Cleanup(cancel)
	go srv.Run(sctx, &framedTransport{r: toServer, w: fromServer})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

func httpSession(b *testing.B, ctx context.Context, store *memory.Store) *mcp.ClientSession {
	_, secret, err := accesstoken.Of(store).Create(ctx, accesstoken.Spec{Agent: "ada"})
	if err != nil {
		b.Fatal(err)
	}
	// No rate limit in the way of a tight loop.
	c := &serveConfig{}
	c.opts.Rate, c.opts.Burst = 1e9, 1<<30
	h, err := newServeHandler(store, c, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(func() {
		h.Shutdown(ctx)
		srv.Close()
	})
	cs, err := connectMCP(ctx, srv.URL, secret)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}
