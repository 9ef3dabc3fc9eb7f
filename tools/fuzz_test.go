package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/engram-go/engram/tools"
)

// FuzzCall: any tool name and argument bytes give a Result (never a panic)
// and, with an open store and a live context, never a Go error: nothing the
// model sends is an infrastructure problem.
func FuzzCall(f *testing.F) {
	seeds := map[string][]string{
		"block_append":        {`{"label":"notes","text":"x"}`, `{"label":"sections","section":"summary","text":"y"}`, `{"label":"shared_rw","owner":"bob","text":"z"}`},
		"block_replace":       {`{"label":"notes","old":"first","new":"1st"}`, `{"label":"dup","old":"a","new":""}`},
		"block_set_field":     {`{"label":"profile","field":"age","value":40}`, `{"label":"profile","field":"tags","value":[1,{"a":2}]}`, `{"label":"profile","field":"name","value":null}`},
		"block_push_item":     {`{"label":"todo","item":"x"}`, `{"label":"profile","field":"tags","item":{"deep":[1]}}`},
		"block_insert_line":   {`{"label":"notes","line":1,"text":"x"}`, `{"label":"notes","line":-9223372036854775808,"text":"x"}`},
		"log_append":          {`{"label":"events","message":"m","fields":{"level":"info","timestamp":"2020-01-01T00:00:00Z"}}`, `{"label":"events","message":"m","fields":{"timestamp":5}}`},
		"archival_insert":     {`{"content":"c","tags":["a"],"metadata":{"k":[1,2]}}`},
		"archival_search":     {`{"query":"c","tags":["a"],"since":"1d","until":"2030-01-01","mode":"fts","limit":3}`, `{"query":"\"NEAR(a b)\" OR *"}`},
		"conversation_search": {`{"query":"hello","mode":"auto"}`},
		"propose_edit":        {`{"label":"shared_human","owner":"bob","op":"check_item","index":1,"value":true,"reason":"r"}`, `{"label":"approval","op":"append_log_entry","text":"m","value":{"a":1},"reason":"r"}`},
		"":                    {`{}`},
		"no_such_tool":        {`null`},
	}
	for name, args := range seeds {
		for _, a := range args {
			f.Add(name, []byte(a))
		}
		f.Add(name, []byte(`{"label":`))
		f.Add(name, []byte("\"{\\\"label\\\":1}\""))
		f.Add(name, []byte{0xff, '{'})
	}
	st := openStore(f, nil)
	fixture(f, st)
	ts := newToolset(f, st, "alice", nil)
	names := tools.Names()
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		// Bias towards real tools: a name that is a number selects one.
		if len(name) == 1 && name[0] >= '0' && name[0] <= '9' {
			name = names[int(name[0]-'0')]
		}
		res, err := ts.Call(context.Background(), name, args)
		if err != nil {
			t.Fatalf("%s(%q): Go error %v", name, args, err)
		}
		if res.Content == "" {
			t.Fatalf("%s(%q): empty result", name, args)
		}
		if res.IsError != strings.HasPrefix(res.Content, "Error: ") {
			t.Fatalf("%s(%q): IsError %v, content %q", name, args, res.IsError, res.Content)
		}
	})
}
