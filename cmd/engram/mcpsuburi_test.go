package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// resources/subscribe accepted a block's URI in any spelling the reader
// resolves (engram://ada/%6Eotes for engram://ada/notes), but the SDK
// matches notifications/resources/updated to subscriptions by the exact
// string, and the server sends the canonical URI: such a subscriber never
// heard of a change. A non-canonical spelling is refused, naming the
// block's URI; the canonical one is accepted.
func TestMCPSubscribeNonCanonicalURI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := memory.Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.CreateBlock(ctx, "ada", memory.BlockSpec{Label: "notes", Value: "x"}); err != nil {
		t.Fatal(err)
	}
	srv, err := newMCPServer(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	inR, in := io.Pipe()
	outR, outW := io.Pipe()
	go func() { srv.Run(ctx, &framedTransport{r: inR, w: outW}); outW.Close() }()
	defer in.Close()
	br := bufio.NewReader(outR)
	reply := func(t *testing.T) rpcReply {
		t.Helper()
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			var r rpcReply
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			if r.ID != nil {
				return r
			}
		}
	}
	send(t, in, initLine)
	reply(t)
	send(t, in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, tc := range []struct {
		uri string
		ok  bool
	}{
		{"engram://ada/%6Eotes", false},
		{"engram://%61da/notes", false},
		{"engram://ada/notes", true},
	} {
		send(t, in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, 10+i, tc.uri))
		r := reply(t)
		switch {
		case tc.ok && r.Error != nil:
			t.Errorf("subscribe %s: %+v", tc.uri, r.Error)
		case !tc.ok && r.Error == nil:
			t.Errorf("subscribe %s accepted: no notification would ever match it", tc.uri)
		case !tc.ok && !strings.Contains(r.Error.Message, "engram://ada/notes"):
			t.Errorf("subscribe %s: error %q does not name the block's URI", tc.uri, r.Error.Message)
		}
	}
}
