package abuse

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/tools"
)

// TestFakeServeChild is the child of TestRequietRefusesLastingDamage:
// a stand-in for engram serve (block_append over MCP on the harness's
// store, /healthz) that, once /damage is hit, makes every later
// block_append 150 ms slower, for good: an attack that leaves the server
// damaged (a lock it never gives back, a leak that slows every write).
func TestFakeServeChild(t *testing.T) {
	db := os.Getenv("ENGRAM_ABUSE_FAKE_DB")
	if db == "" {
		t.Skip("child of TestRequietRefusesLastingDamage")
	}
	ctx := context.Background()
	st, err := memory.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tools.New(st.Agent(VictimAgent), nil)
	if err != nil {
		t.Fatal(err)
	}
	var damaged atomic.Bool
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake-serve", Version: "0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "block_append"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		Label string `json:"label"`
		Text  string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		if damaged.Load() {
			time.Sleep(150 * time.Millisecond)
		}
		args, _ := json.Marshal(in)
		res, err := ts.Call(ctx, "block_append", args)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/damage", func(w http.ResponseWriter, _ *http.Request) { damaged.Store(true); io.WriteString(w, "damaged\n") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("{\"url\":\"http://%s\"}\n", ln.Addr())
	os.Stdout.Sync()
	http.Serve(ln, mux)
}

// An attack whose only fault is the victim's p99 may be judged again
// against a quiet baseline measured again (Requiet); an attack that left
// the server slow for good (no CPU used, so Settled holds; new sessions
// still open, so Recovery holds) must not pass that way: Requiet fails
// when the victim has not come back near its Start baseline.
func TestRequietRefusesLastingDamage(t *testing.T) {
	if os.Getenv("ENGRAM_ABUSE_FAKE_DB") != "" {
		t.Skip("child")
	}
	if runtime.GOOS != "linux" {
		t.Skip("measures the child through /proc")
	}
	ctx := context.Background()
	h, err := Start(ctx, &Options{
		Dir: t.TempDir(),
		Command: func(db string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFakeServeChild$")
			cmd.Env = append(os.Environ(), "ENGRAM_ABUSE_FAKE_DB="+db)
			return cmd
		},
		Quiet:         2 * time.Second,
		Window:        2 * time.Second,
		AttackTimeout: 10 * time.Second,
		SettleTimeout: 10 * time.Second,
		Logf:          t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	damage := Attack{Key: "damage", Name: "one request that leaves every later write 150 ms slower", Requests: 1, Scale: 1,
		prepare: func(ctx context.Context, h *Harness) (prepared, error) {
			return prepared{fire: func(ctx context.Context) (string, error) {
				req, _ := http.NewRequestWithContext(ctx, "GET", h.server().base+"/damage", nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return "", err
				}
				resp.Body.Close()
				return fmt.Sprintf("%d", resp.StatusCode), nil
			}}, nil
		}}
	limits := Goal
	limits.Slack = 50 * time.Millisecond // abuseSlack without -race
	r := h.Run(ctx, damage)
	first := r.Violations(limits)
	t.Logf("first run: quiet p99 %v, attacked p99 %v: %v", r.Quiet.P99, r.Attacked.P99, first)
	if len(first) != 1 || !r.SlowVictim(limits) {
		t.Fatalf("an attack that leaves every victim write 150 ms slower: violations %v, want the victim's p99 alone", first)
	}
	q, err := h.Requiet(ctx, 3*time.Second, limits)
	if err == nil {
		t.Fatalf("Requiet took %v (p99) as the quiet baseline of a server an attack left slow (%v at the start)", q.P99, h.Quiet().P99)
	}
	t.Log(err)
}
