package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// mergeCheckSchemas are the blocks the merge-check tests edit from outside.
var mergeCheckSchemas = map[string]schema.Schema{
	"map": schema.Map{Fields: []schema.FieldDef{
		{Name: "n", Type: schema.FieldInteger},
		{Name: "owner", Type: schema.FieldString, ReadOnly: true, Default: "ada"},
		{Name: "hits", Type: schema.FieldCounter},
		{Name: "notes", Type: schema.FieldText},
	}},
	"list": schema.List{Item: schema.FieldInteger},
	"log":  schema.Log{},
	"text": schema.Text{},
	"comp": schema.Composite{Sections: []schema.Section{
		{Name: "facts", Schema: schema.Text{}, ReadOnly: true},
		{Name: "scratch", Schema: schema.Text{}},
	}},
}

// peerEdit loads the block's saved document as an automerge peer would,
// lets edit change it, and returns the whole edited document.
func peerEdit(t *testing.T, doc *blocks.Document, edit func(root *automerge.Map) error) []byte {
	t.Helper()
	saved, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	if err := edit(peer.RootMap()); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Commit("from a peer"); err != nil {
		t.Fatal(err)
	}
	return peer.Save()
}

func sub(m *automerge.Map, keys ...string) *automerge.Map {
	for _, k := range keys {
		v, err := m.Get(k)
		if err != nil {
			panic(err)
		}
		m = v.Map()
	}
	return m
}

func subList(m *automerge.Map, key string) *automerge.List {
	v, err := m.Get(key)
	if err != nil {
		panic(err)
	}
	return v.List()
}

func subText(m *automerge.Map, key string) *automerge.Text {
	v, err := m.Get(key)
	if err != nil {
		panic(err)
	}
	return v.Text()
}

// A change that enters from outside is
// judged as a local edit is — schema, read-only parts, permission, unknown
// root keys — and a refused one changes nothing, also after reopening.
func TestMergeChangesJudgedAsAnEdit(t *testing.T) {
	ctx := context.Background()
	type tc struct {
		name  string
		kind  string
		perm  blocks.Permission // the merging agent's; default ReadWrite
		edit  func(root *automerge.Map) error
		want  error // nil: accepted
		field string
	}
	cases := []tc{
		{"string into integer field", "map", 0, func(r *automerge.Map) error { return sub(r, "fields").Set("n", "seven") }, schema.ErrInvalid, "n"},
		{"2.5 into integer field", "map", 0, func(r *automerge.Map) error { return sub(r, "fields").Set("n", 2.5) }, schema.ErrInvalid, "n"},
		{"whole number into integer field", "map", 0, func(r *automerge.Map) error { return sub(r, "fields").Set("n", int64(7)) }, nil, ""},
		{"read-only field overwritten", "map", 0, func(r *automerge.Map) error { return sub(r, "fields").Set("owner", "mallory") }, blocks.ErrPermission, "owner"},
		{"read-only field overwritten by admin", "map", blocks.Admin, func(r *automerge.Map) error { return sub(r, "fields").Set("owner", "mallory") }, blocks.ErrPermission, "owner"},
		{"counter replaced by a number", "map", 0, func(r *automerge.Map) error { return sub(r, "fields").Set("hits", int64(3)) }, schema.ErrInvalid, "hits"},
		{"unknown field", "map", 0, func(r *automerge.Map) error { return sub(r, "fields").Set("extra", "x") }, schema.ErrInvalid, "extra"},
		{"unknown root key on a map", "map", 0, func(r *automerge.Map) error { return r.Set("extra", "x") }, schema.ErrInvalid, "extra"},
		{"string item in a list of integers", "list", 0, func(r *automerge.Map) error {
			return subList(r, "items").Append(map[string]any{"value": "x", "checked": false})
		}, schema.ErrInvalid, "[0]"},
		{"integer item in a list of integers", "list", 0, func(r *automerge.Map) error {
			return subList(r, "items").Append(map[string]any{"value": int64(4), "checked": false})
		}, nil, ""},
		{"unknown root key on a list", "list", 0, func(r *automerge.Map) error { return r.Set("extra", int64(1)) }, schema.ErrInvalid, "extra"},
		{"unknown root key on a log", "log", 0, func(r *automerge.Map) error { return r.Set("extra", true) }, schema.ErrInvalid, "extra"},
		{"log message a number", "log", 0, func(r *automerge.Map) error {
			return subList(r, "entries").Append(map[string]any{"message": int64(5), "timestamp": testNow})
		}, schema.ErrInvalid, "message"},
		{"log entry without timestamp", "log", 0, func(r *automerge.Map) error {
			return subList(r, "entries").Append(map[string]any{"message": "hi"})
		}, schema.ErrInvalid, "timestamp"},
		{"log entry appended", "log", blocks.Append, func(r *automerge.Map) error {
			return subList(r, "entries").Append(map[string]any{"message": "hi", "timestamp": testNow})
		}, nil, ""},
		{"NUL byte in text", "text", 0, func(r *automerge.Map) error { return subText(r, "content").Append("a\x00b") }, schema.ErrInvalid, "NUL"},
		{"append agent rewrites text", "text", blocks.Append, func(r *automerge.Map) error { return subText(r, "content").Splice(0, 1, "J") }, blocks.ErrPermission, "append"},
		{"append agent appends text", "text", blocks.Append, func(r *automerge.Map) error { return subText(r, "content").Append("!") }, nil, ""},
		{"append agent lowers a counter", "map", blocks.Append, func(r *automerge.Map) error {
			v, _ := sub(r, "fields").Get("hits")
			return v.Counter().Inc(-1)
		}, blocks.ErrPermission, "hits"},
		{"append agent raises a counter", "map", blocks.Append, func(r *automerge.Map) error {
			v, _ := sub(r, "fields").Get("hits")
			return v.Counter().Inc(2)
		}, nil, ""},
		{"human agent cannot merge", "text", blocks.Human, func(r *automerge.Map) error { return subText(r, "content").Append("!") }, blocks.ErrPermission, ""},
		{"read-only section rewritten", "comp", 0, func(r *automerge.Map) error {
			return subText(sub(r, "sections", "facts"), "content").Append(" and more")
		}, blocks.ErrPermission, "facts"},
		{"unknown section", "comp", 0, func(r *automerge.Map) error { return sub(r, "sections").Set("extra", automerge.NewMap()) }, schema.ErrInvalid, "extra"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.db")
			c := openFile(t, path, nil)
			spec := memory.BlockSpec{Label: "b", Schema: mergeCheckSchemas[tc.kind]}
			switch tc.kind {
			case "text":
				spec.Value = "hello"
			case "comp":
				spec.Value = map[string]any{"facts": "the sky is blue", "scratch": ""}
			}
			doc, err := createBlockDoc(ctx, c.Agent("ada"), spec)
			if err != nil {
				t.Fatal(err)
			}
			agent, owner := "ada", "ada"
			if p := tc.perm; p != 0 {
				// Another agent holds p through a share.
				agent, owner = "bob", "ada"
				if err := c.Agent("ada").Block("b").Share(ctx, "bob", p); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := doc.Value()
			data := peerEdit(t, doc, tc.edit)
			err = c.Agent(agent).Shared(owner, "b").Merge(ctx, data)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("valid merge refused: %v", err)
				}
			} else {
				if !errors.Is(err, tc.want) {
					t.Fatalf("merge: err = %v, want %v", err, tc.want)
				}
				if !containsAll(err.Error(), `"b"`, tc.field) {
					t.Fatalf("error %q does not name the block and %q", err, tc.field)
				}
				if got, _ := doc.Value(); !reflect.DeepEqual(got, before) {
					t.Fatalf("refused merge changed the block: %v, was %v", got, before)
				}
			}
			c.Close()
			c = openFile(t, path, nil)
			d, err := c.Agent("ada").Block("b").Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			v, err := d.Value()
			if err != nil {
				t.Fatal(err)
			}
			if err := schemaValid(d.Schema(), v); err != nil {
				t.Fatalf("after reopening, the block's value is invalid: %v", err)
			}
			if tc.want != nil && !reflect.DeepEqual(v, before) {
				t.Fatalf("after reopening = %v, want %v", v, before)
			}
		})
	}
}

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// schemaValid checks a block value (the form Value returns) with the
// schema's own Validate, as a user of the block would.
func schemaValid(s schema.Schema, v any) error {
	switch sc := schema.Deref(s).(type) {
	case schema.List:
		items, _ := v.([]blocks.Item)
		vals := make([]any, len(items))
		for i, it := range items {
			vals[i] = it.Value
		}
		return sc.Validate(vals)
	case schema.Log:
		entries, _ := v.([]blocks.LogEntry)
		for _, e := range entries {
			m := map[string]any{schema.LogMessage: e.Message, schema.LogTimestamp: e.Timestamp}
			for k, f := range e.Fields {
				m[k] = f
			}
			if err := sc.Validate(m); err != nil {
				return err
			}
		}
		return nil
	case schema.Composite:
		m, _ := v.(map[string]any)
		for _, sec := range sc.Sections {
			if err := schemaValid(sec.Schema, m[sec.Name]); err != nil {
				return err
			}
		}
		return nil
	}
	return s.Validate(v)
}
