package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipeServer runs the MCP server for agent "ada" over the framed transport
// on pipes, returning a writer for its stdin and a reader of its replies.
func pipeServer(t testing.TB) (in io.WriteCloser, out <-chan string, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := memory.Open(ctx, ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "Likes tea."})
	srv, err := newMCPServer(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- srv.Run(ctx, &framedTransport{r: inR, w: outW})
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); cancel(); store.Close() })
	// Replies are read as they come, so the server never blocks on a
	// reply the test has not asked for yet.
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		br := bufio.NewReader(outR)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	return inW, lines, errc
}

type rpcReply struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func readReply(t testing.TB, out <-chan string) rpcReply {
	t.Helper()
	select {
	case line, ok := <-out:
		if !ok {
			t.Fatal("the server closed its output")
		}
		var rep rpcReply
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			t.Fatalf("reply %q is not JSON: %v", line, err)
		}
		return rep
	case <-time.After(10 * time.Second):
		t.Fatal("no reply within 10s")
	}
	return rpcReply{}
}

func send(t testing.TB, in io.Writer, line string) {
	t.Helper()
	if _, err := io.WriteString(in, line+"\n"); err != nil {
		t.Fatalf("send %q: %v", line, err)
	}
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

func initialize(t testing.TB, in io.Writer, out <-chan string) {
	t.Helper()
	send(t, in, initLine)
	if rep := readReply(t, out); rep.Error != nil {
		t.Fatalf("initialize: %+v", rep.Error)
	}
	send(t, in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// ping checks the server still answers.
func ping(t testing.TB, in io.Writer, out <-chan string, id int) {
	t.Helper()
	send(t, in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	rep := readReply(t, out)
	if rep.Error != nil || fmt.Sprint(rep.ID) != fmt.Sprint(id) {
		t.Fatalf("ping %d after bad input: %+v", id, rep)
	}
}

// No input line ends the session; each malformed one gets
// the JSON-RPC error it deserves.
func TestMCPFramingMalformedInput(t *testing.T) {
	in, out, done := pipeServer(t)
	initialize(t, in, out)
	tests := []struct {
		name, line string
		code       int
	}{
		{"not json", `hello there`, codeParseError},
		{"open brace", `{`, codeParseError},
		{"empty batch", `[]`, codeInvalidRequest},
		{"batch under 2025-06-18", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, codeInvalidRequest},
		{"number", `42`, codeInvalidRequest},
		{"null", `null`, codeInvalidRequest},
		{"string", `"ping"`, codeInvalidRequest},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, codeInvalidRequest},
		{"no jsonrpc", `{"id":3,"method":"ping"}`, codeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, codeInvalidRequest},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, codeInvalidRequest},
		{"method not a string", `{"jsonrpc":"2.0","id":3,"method":7}`, codeInvalidRequest},
		{"trailing NUL", `{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\x00", codeParseError},
		{"deep nesting", strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000), codeParseError},
		{"truncated", `{"jsonrpc":"2.0","id":3,"method":"pi`, codeParseError},
		{"invalid utf-8", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"\xff\"}", codeParseError},
		{"unknown method", `{"jsonrpc":"2.0","id":9,"method":"no/such"}`, -32601},
		// Ids the SDK would answer under another id (it keeps numbers as
		// int64), or not at all (null: taken for a notification).
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, codeInvalidRequest},
		{"fractional id", `{"jsonrpc":"2.0","id":2.5,"method":"ping"}`, codeInvalidRequest},
		{"exponent id", `{"jsonrpc":"2.0","id":1e300,"method":"ping"}`, codeInvalidRequest},
		{"id past 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, codeInvalidRequest},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, codeInvalidRequest},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			send(t, in, tc.line)
			rep := readReply(t, out)
			if rep.Error == nil || rep.Error.Code != tc.code {
				t.Fatalf("reply %+v, want error code %d", rep, tc.code)
			}
			ping(t, in, out, 100+i)
		})
	}
	select {
	case err := <-done:
		t.Fatalf("the server stopped: %v", err)
	default:
	}
}

// Ids at the edge of what the SDK keeps exactly are answered under the same
// id.
func TestMCPEchoesIDs(t *testing.T) {
	in, out, _ := pipeServer(t)
	initialize(t, in, out)
	for _, id := range []string{`9007199254740992`, `-9007199254740992`, `0`, `"x y"`, `"9007199254740993"`} {
		send(t, in, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		line := <-out
		if !strings.Contains(line, `"id":`+id+`,`) && !strings.Contains(line, `"id":`+id+`}`) {
			t.Errorf("ping with id %s answered %s", id, line)
		}
	}
}

// Under a protocol version with batches, an id used twice in one batch gets
// an error in the batch's array, and every other request its reply: one
// array, nothing lost (the second reply used to vanish with the array).
func TestMCPBatchWithDuplicateIDs(t *testing.T) {
	in, out, _ := pipeServer(t)
	send(t, in, strings.Replace(initLine, "2025-06-18", "2025-03-26", 1))
	if rep := readReply(t, out); rep.Error != nil {
		t.Fatalf("initialize: %+v", rep.Error)
	}
	send(t, in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(t, in, `[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"ping"}]`)
	var line string
	select {
	case line = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("no reply to the batch within 10s")
	}
	var reps []rpcReply
	if err := json.Unmarshal([]byte(line), &reps); err != nil {
		t.Fatalf("the batch's reply %q is not one array: %v", line, err)
	}
	var ok, dup int
	for _, r := range reps {
		switch {
		case r.Error == nil:
			ok++
		case r.Error.Code == codeInvalidRequest && fmt.Sprint(r.ID) == "7":
			dup++
		default:
			t.Errorf("unexpected reply %+v", r)
		}
	}
	if ok != 2 || dup != 1 {
		t.Fatalf("batch replies %s: want two results and one duplicate-id error", line)
	}
	ping(t, in, out, 9)
}

// A second initialize is the client's mistake (-32600), not the server's.
func TestMCPSecondInitialize(t *testing.T) {
	in, out, _ := pipeServer(t)
	initialize(t, in, out)
	send(t, in, initLine)
	if rep := readReply(t, out); rep.Error == nil || rep.Error.Code != codeInvalidRequest {
		t.Fatalf("second initialize: %+v", rep)
	}
	ping(t, in, out, 2)
}

// Requests before initialize get a proper error code, not 0.
func TestMCPBeforeInitialize(t *testing.T) {
	in, out, _ := pipeServer(t)
	send(t, in, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	rep := readReply(t, out)
	if rep.Error == nil || rep.Error.Code == 0 {
		t.Fatalf("tools/list before initialize: %+v", rep)
	}
	initialize(t, in, out)
	ping(t, in, out, 2)
}

// FuzzMCPFraming: any line gets at most one reply, always well-formed
// JSON-RPC, and the server answers a ping afterwards.
func FuzzMCPFraming(f *testing.F) {
	for _, s := range []string{"", "{", "[]", "42", "null", `{"jsonrpc":"1.0"}`, `{"jsonrpc":"2.0","id":{},"method":"x"}`, "\x00", `[{"jsonrpc":"2.0","method":"ping","id":1}]`} {
		f.Add(s)
	}
	in, out, _ := pipeServer(f)
	initialize(f, in, out)
	n := 1000
	f.Fuzz(func(t *testing.T, line string) {
		line = strings.NewReplacer("\n", " ", "\r", " ").Replace(line)
		n++
		send(t, in, line)
		send(t, in, fmt.Sprintf(`{"jsonrpc":"2.0","id":"ping-%d","method":"ping"}`, n))
		for {
			rep := readReply(t, out)
			if fmt.Sprint(rep.ID) == fmt.Sprintf("ping-%d", n) {
				if rep.Error != nil {
					t.Fatalf("ping after %q: %+v", line, rep.Error)
				}
				return
			}
			if rep.Error != nil && rep.Error.Code == 0 {
				t.Fatalf("reply to %q has error code 0", line)
			}
		}
	})
}

// A storage failure in a tool is a tool result with
// isError, not a protocol error.
func TestMCPToolFailureIsAResult(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locked.db")
	store, err := memory.Open(ctx, path, &memory.Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "x"})
	srv, err := newMCPServer(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	cs := connectClient(t, srv)
	db, _ := sql.Open(sqlitedriver.Name, path)
	defer db.Close()
	conn, _ := db.Conn(ctx)
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block_append", Arguments: map[string]any{"label": "notes", "text": "lost?"}})
	conn.ExecContext(ctx, "ROLLBACK")
	if err != nil {
		t.Fatalf("a storage failure came back as a protocol error: %v", err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not persisted") {
		t.Fatalf("result = %+v", res)
	}
	if r, _ := store.Agent("ada").Block("notes").Render(ctx); r != "x" {
		t.Fatalf("block = %q", r)
	}
}

func connectClient(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {},
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Resources are resolved at request time and the list
// follows the agent's blocks and shares, with list_changed notifications.
func TestMCPResourcesFollowTheStore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := memory.Open(ctx, filepath.Join(t.TempDir(), "res.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "x"})
	store.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "board", Value: "bob's"})
	store.Agent("bob").Block("board").Share(ctx, "ada", blocks.ReadOnly)
	srv, resources, err := newMCPServerListed(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	var notified atomic.Int32
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { notified.Add(1) },
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go watchResources(ctx, srv, store, "ada", resources, 20*time.Millisecond)
	// Nothing changed: no list_changed (the server's own start used to
	// announce every resource again).
	time.Sleep(100 * time.Millisecond)
	if n := notified.Load(); n != 0 {
		t.Fatalf("%d list_changed notifications before anything changed", n)
	}

	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "late", Value: "created after start"})
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://ada/late"})
	if err != nil || r.Contents[0].Text != "created after start" {
		t.Fatalf("read a block created after start: %v %+v", err, r)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://bob/secret"}); err == nil {
		t.Fatal("read another agent's unshared block")
	}
	listed := func() string {
		rl, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range rl.Resources {
			uris = append(uris, r.URI)
		}
		return strings.Join(uris, " ")
	}
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for listed() != want {
			if time.Now().After(deadline) {
				t.Fatalf("resources = %s, want %s", listed(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("engram://ada/late engram://ada/notes engram://bob/board")
	store.Agent("bob").Block("board").Unshare(ctx, "ada")
	waitFor("engram://ada/late engram://ada/notes")
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://bob/board"}); err == nil {
		t.Fatal("read a block whose share was revoked")
	}
	for deadline := time.Now().Add(20 * time.Second); notified.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no notifications/resources/list_changed was sent")
		}
	}
}

// With piped stdin, every request gets its reply before
// the process exits 0, malformed lines included.
func TestMCPBinaryAnswersPipedInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "engram")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "m.db")
	input := strings.Join([]string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`not json`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"archival_insert","arguments":{"content":"piped note"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"archival_search","arguments":{"query":"piped"}}}`,
	}, "\n") + "\n"
	cmd := exec.Command(bin, "--db", db, "mcp", "--agent", "ada")
	cmd.Stdin = strings.NewReader(input)
	cmd.Env = append(os.Environ(), "ENGRAM_EMBEDDER=none")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("engram mcp: %v\n%s", err, out)
	}
	ids := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var rep rpcReply
		if err := json.Unmarshal([]byte(l), &rep); err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		ids[fmt.Sprint(rep.ID)] = true
	}
	for _, id := range []string{"1", "2", "<nil>", "3", "4"} {
		if !ids[id] {
			t.Errorf("no reply with id %s in:\n%s", id, out)
		}
	}
}

// A batch (protocol 2025-03-26) is at most maxBatch messages: a longer
// one is refused whole with one -32600 error before any of it runs, so
// one line cannot queue a reply array of unbounded length.
func TestMCPBatchCapped(t *testing.T) {
	in, out, _ := pipeServer(t)
	send(t, in, strings.Replace(initLine, "2025-06-18", "2025-03-26", 1))
	if rep := readReply(t, out); rep.Error != nil {
		t.Fatalf("initialize: %+v", rep.Error)
	}
	send(t, in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	pings := func(first, n int) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, first+i)
		}
		return b.String() + "]"
	}
	send(t, in, pings(100, maxBatch+1))
	rep := readReply(t, out)
	if rep.Error == nil || rep.Error.Code != codeInvalidRequest || rep.ID != nil || !strings.Contains(rep.Error.Message, fmt.Sprint(maxBatch)) {
		t.Fatalf("a batch of %d: %+v; want one -32600 naming the cap %d", maxBatch+1, rep, maxBatch)
	}
	send(t, in, pings(200, maxBatch))
	var reps []rpcReply
	select {
	case line := <-out:
		if err := json.Unmarshal([]byte(line), &reps); err != nil || len(reps) != maxBatch {
			t.Fatalf("a batch of %d: reply %.200q (%v)", maxBatch, line, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reply to the batch within 10s")
	}
	ping(t, in, out, 9)
}
