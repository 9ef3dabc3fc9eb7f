package blocks_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// nopWriter lets a test hold a Replica: Replica.Merge never calls it.
type nopWriter struct{}

func (nopWriter) Write(ctx context.Context, req blockseam.WriteRequest, apply func(blocks.Permission) error) error {
	return apply(req.Permission)
}

var transitionFields = []schema.FieldDef{
	{Name: "n", Type: schema.FieldInteger},
	{Name: "s", Type: schema.FieldString},
	{Name: "ro", Type: schema.FieldString, ReadOnly: true, Default: "fixed"},
	{Name: "c", Type: schema.FieldCounter},
	{Name: "t", Type: schema.FieldText},
	{Name: "l", Type: schema.FieldList},
}

// transitionBlocks are the block kinds FuzzMergeTransition merges into:
// every schema kind, with read-only parts where the kind has them.
var transitionBlocks = []struct {
	schema schema.Schema
	value  any
}{
	{schema.Text{}, "hello"},
	{schema.Map{Fields: transitionFields}, map[string]any{"n": int64(1), "s": "a", "t": "tt", "l": []any{"x"}}},
	{schema.List{Item: schema.FieldInteger, MaxItems: 5, Checkbox: true}, []any{int64(1), int64(2)}},
	{schema.Log{Entry: []schema.FieldDef{{Name: "lvl", Type: schema.FieldInteger}}}, nil},
	{schema.Composite{Sections: []schema.Section{
		{Name: "facts", Schema: schema.Text{}, ReadOnly: true},
		{Name: "m", Schema: schema.Map{Fields: transitionFields}},
		{Name: "items", Schema: schema.List{Item: schema.FieldString}},
	}}, map[string]any{"facts": "sky is blue", "items": []any{"a"}}},
}

var transitionValues = []any{"str", int64(7), 2.5, true, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), int64(-3), "", "ünï"}

var transitionPerms = []blocks.Permission{blocks.ReadOnly, blocks.Partner, blocks.Human, blocks.Append, blocks.ReadWrite, blocks.Admin}

// node is a map in the document and the schema of what it holds.
type node struct {
	m *automerge.Map
	s schema.Schema
}

func transitionNodes(root *automerge.Map, s schema.Schema) []node {
	c, ok := s.(schema.Composite)
	if !ok {
		return []node{{root, s}}
	}
	var out []node
	secs, _ := root.Get("sections")
	for _, sec := range c.Sections {
		v, _ := secs.Map().Get(sec.Name)
		out = append(out, node{v.Map(), sec.Schema})
	}
	return out
}

// rawEdit makes one edit a peer could make, valid or not, picked by op and
// arg. Edits that do not fit the node are skipped.
func rawEdit(n node, op, arg byte, str string) {
	val := transitionValues[int(arg)%len(transitionValues)]
	get := func(m *automerge.Map, k string) *automerge.Value {
		v, err := m.Get(k)
		if err != nil {
			return nil
		}
		return v
	}
	switch op % 11 {
	case 0, 1: // text: append, or rewrite the start
		if v := get(n.m, "content"); v != nil && v.Kind() == automerge.KindText {
			if op%11 == 0 {
				_ = v.Text().Append(str)
			} else if l := v.Text().Len(); l > 0 {
				_ = v.Text().Splice(0, 1, str)
			}
		}
	case 2: // a field gets any value, a known field or not
		if v := get(n.m, "fields"); v != nil && v.Kind() == automerge.KindMap {
			names := []string{"n", "s", "ro", "c", "t", "l", "zz"}
			_ = v.Map().Set(names[int(arg)%len(names)], val)
		}
	case 3: // a counter moves either way
		if v := get(n.m, "fields"); v != nil && v.Kind() == automerge.KindMap {
			if c := get(v.Map(), "c"); c != nil && c.Kind() == automerge.KindCounter {
				_ = c.Counter().Inc(int64(arg%7) - 3)
			}
		}
	case 4: // an item of any type is added at the end
		if v := get(n.m, "items"); v != nil && v.Kind() == automerge.KindList {
			_ = v.List().Append(map[string]any{"value": val, "checked": arg%2 == 0})
		}
	case 5: // the first item goes
		if v := get(n.m, "items"); v != nil && v.Kind() == automerge.KindList && v.List().Len() > 0 {
			_ = v.List().Delete(0)
		}
	case 6: // an unknown root key
		_ = n.m.Set("extra", val)
	case 7: // a log entry of any shape is appended
		if v := get(n.m, "entries"); v != nil && v.Kind() == automerge.KindList {
			e := map[string]any{"message": val}
			if arg%3 != 0 {
				e["message"] = str
				e["timestamp"] = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
			}
			if arg%4 == 0 {
				e["lvl"] = val
			}
			_ = v.List().Append(e)
		}
	case 8: // the oldest log entry goes
		if v := get(n.m, "entries"); v != nil && v.Kind() == automerge.KindList && v.List().Len() > 0 {
			_ = v.List().Delete(0)
		}
	case 9: // a text field grows
		if v := get(n.m, "fields"); v != nil && v.Kind() == automerge.KindMap {
			if t := get(v.Map(), "t"); t != nil && t.Kind() == automerge.KindText {
				_ = t.Text().Append(str)
			}
		}
	case 10: // an item's value changes in place
		if v := get(n.m, "items"); v != nil && v.Kind() == automerge.KindList && v.List().Len() > 0 {
			if it, err := v.List().Get(0); err == nil && it.Kind() == automerge.KindMap {
				_ = it.Map().Set("value", val)
			}
		}
	}
}

// schemaValid checks a block value (the form Value returns) with the
// schema's own Validate, independently of the code under test.
func schemaValid(s schema.Schema, v any) error {
	switch sc := s.(type) {
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
			if e.Timestamp.IsZero() {
				return errors.New("log entry without timestamp")
			}
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

// rootKeys lists the keys of each node map of a saved document.
func rootKeys(t *testing.T, data []byte, s schema.Schema) []string {
	am, err := automerge.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range transitionNodes(am.RootMap(), s) {
		ks, _ := n.m.Keys()
		out = append(out, strings.Join(ks, ","))
	}
	return out
}

// FuzzMergeTransition merges random peer edits of every schema kind into
// a managed block as agents of every permission. Every accepted merge
// leaves a value its schema's own Validate accepts, no key the layout
// lacks, read-only parts as they were, only appends for an Append agent
// or a Log block, nothing merged by ReadOnly, Partner or Human, and a size
// within the limit; every refused merge changes nothing.
func FuzzMergeTransition(f *testing.F) {
	f.Add(byte(0), byte(3), byte(0), []byte{0, 1, 1, 0}, "!")
	f.Add(byte(1), byte(4), byte(0), []byte{2, 0, 2, 2, 3, 1}, "x")
	f.Add(byte(1), byte(3), byte(0), []byte{3, 5, 9, 0}, "y")
	f.Add(byte(2), byte(4), byte(0), []byte{4, 0, 4, 1, 10, 2}, "")
	f.Add(byte(2), byte(3), byte(1), []byte{5, 0}, "")
	f.Add(byte(3), byte(5), byte(1), []byte{7, 1, 7, 0, 8, 0}, "msg")
	f.Add(byte(3), byte(4), byte(0), []byte{7, 4, 6, 1}, "m")
	f.Add(byte(4), byte(4), byte(0), []byte{0, 0, 2, 2, 4, 0}, "more")
	f.Add(byte(4), byte(5), byte(1), []byte{1, 0, 2, 7}, "z")
	f.Add(byte(0), byte(0), byte(0), []byte{0, 0}, "a")
	f.Add(byte(0), byte(2), byte(0), []byte{0, 0}, strings.Repeat("long ", 20))
	f.Fuzz(func(t *testing.T, kind, perm, typ byte, ops []byte, str string) {
		if len(ops) > 32 {
			ops = ops[:32]
		}
		if !utf8.ValidString(str) {
			str = strings.ToValidUTF8(str, "?")
		}
		k := transitionBlocks[int(kind)%len(transitionBlocks)]
		p := transitionPerms[int(perm)%len(transitionPerms)]
		info := blocks.Info{Label: "fz", Type: blocks.Working, Schema: k.schema, Permission: blocks.ReadWrite, Owner: "ada", CharLimit: 160}
		if typ%2 == 1 {
			info.Type = blocks.Log
		}
		d, err := blocks.New(info, nil)
		if err != nil {
			t.Fatal(err)
		}
		if k.value != nil {
			must(t, d.SetValue(k.value, blocks.System))
		}
		if _, ok := k.schema.(schema.Log); ok {
			must(t, d.AppendLogEntry(map[string]any{"message": "first"}, blocks.System))
		}
		saved, err := d.Save()
		must(t, err)
		peer, err := automerge.Load(saved)
		must(t, err)
		nodes := transitionNodes(peer.RootMap(), k.schema)
		for i := 0; i+1 < len(ops); i += 2 {
			rawEdit(nodes[int(ops[i+1])%len(nodes)], ops[i], ops[i+1], str)
		}
		if _, err := peer.Commit("peer"); err != nil {
			return // nothing changed
		}
		rep, err := blockseam.Manage(d, nopWriter{})
		must(t, err)
		before, err := d.Value()
		must(t, err)
		beforeHeads, beforeSize := d.Heads(), d.Size()
		_, _, err = rep.Merge(peer.Save(), blocks.Origin{Agent: "bob", Permission: p})
		after, verr := d.Value()
		must(t, verr)
		if err != nil {
			if !errors.Is(err, schema.ErrInvalid) && !errors.Is(err, blocks.ErrPermission) && !errors.Is(err, blocks.ErrLimit) {
				t.Fatalf("refused with an unexpected error: %v", err)
			}
			if !reflect.DeepEqual(d.Heads(), beforeHeads) || !reflect.DeepEqual(after, before) {
				t.Fatalf("refused merge (%v) changed the block: %v, was %v", err, after, before)
			}
			return
		}
		if p < blocks.Append && !reflect.DeepEqual(after, before) {
			t.Fatalf("%s merged a change: %v, was %v", p, after, before)
		}
		if verr := schemaValid(k.schema, after); verr != nil {
			t.Fatalf("accepted merge leaves an invalid value %v: %v", after, verr)
		}
		saved, err = d.Save()
		must(t, err)
		for i, keys := range rootKeys(t, saved, k.schema) {
			if strings.Contains(keys, "extra") {
				t.Fatalf("accepted merge left an unknown root key in node %d: %s", i, keys)
			}
		}
		if s := d.Size(); s > info.CharLimit && s > beforeSize {
			t.Fatalf("accepted merge grows the block to %d characters, limit %d", s, info.CharLimit)
		}
		checkReadOnly(t, k.schema, before, after)
		if p == blocks.Append || info.Type == blocks.Log {
			checkAppendOnly(t, k.schema, before, after, p == blocks.Admin)
		}
	})
}

func checkReadOnly(t *testing.T, s schema.Schema, before, after any) {
	t.Helper()
	switch sc := s.(type) {
	case schema.Map:
		if b, a := before.(map[string]any)["ro"], after.(map[string]any)["ro"]; !reflect.DeepEqual(b, a) {
			t.Fatalf("read-only field changed: %v -> %v", b, a)
		}
	case schema.Composite:
		bm, am := before.(map[string]any), after.(map[string]any)
		for _, sec := range sc.Sections {
			if sec.ReadOnly && !reflect.DeepEqual(bm[sec.Name], am[sec.Name]) {
				t.Fatalf("read-only section %q changed", sec.Name)
			}
			checkReadOnly(t, sec.Schema, bm[sec.Name], am[sec.Name])
		}
	}
}

// checkAppendOnly checks that after only appends to before; with trim
// (an Admin) a log may also lose its oldest entries.
func checkAppendOnly(t *testing.T, s schema.Schema, before, after any, trim bool) {
	t.Helper()
	switch sc := s.(type) {
	case schema.Text:
		if !strings.HasPrefix(after.(string), before.(string)) {
			t.Fatalf("append-only text rewritten: %q -> %q", before, after)
		}
	case schema.Map:
		bm, am := before.(map[string]any), after.(map[string]any)
		for _, f := range []string{"n", "s", "ro"} {
			if !reflect.DeepEqual(bm[f], am[f]) {
				t.Fatalf("append-only field %q changed: %v -> %v", f, bm[f], am[f])
			}
		}
		bc, _ := bm["c"].(int64)
		if ac, _ := am["c"].(int64); ac < bc {
			t.Fatalf("append-only counter lowered: %d -> %d", bc, ac)
		}
	case schema.List:
		b, a := before.([]blocks.Item), after.([]blocks.Item)
		if len(a) < len(b) || !reflect.DeepEqual(b, a[:len(b)]) {
			t.Fatalf("append-only items changed: %v -> %v", b, a)
		}
	case schema.Log:
		b, a := before.([]blocks.LogEntry), after.([]blocks.LogEntry)
		drop := 0
		for trim && drop < len(b) && (len(a) < len(b)-drop || !reflect.DeepEqual(b[drop:], a[:len(b)-drop])) {
			drop++
		}
		if rest := b[drop:]; len(a) < len(rest) || !reflect.DeepEqual(rest, a[:len(rest)]) {
			t.Fatalf("append-only log changed: %v -> %v", b, a)
		}
	case schema.Composite:
		bm, am := before.(map[string]any), after.(map[string]any)
		for _, sec := range sc.Sections {
			checkAppendOnly(t, sec.Schema, bm[sec.Name], am[sec.Name], trim)
		}
	}
}
