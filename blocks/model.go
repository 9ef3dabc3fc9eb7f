package blocks

import (
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/schema"
)

// Item is one element of a List block.
type Item struct {
	Value   any  `json:"value"`
	Checked bool `json:"checked,omitempty"`
}

// LogEntry is one entry of a Log block.
type LogEntry struct {
	Timestamp time.Time      `json:"timestamp"`
	Message   string         `json:"message"`
	Fields    map[string]any `json:"fields,omitempty"`
}

// Document layout. Every schema keeps its content in one container under a
// node map (the root, or a composite section's map), created when the block
// is created so that concurrent writers never race to create it.
const (
	keyContent  = "content"  // Text: automerge Text
	keyFields   = "fields"   // Map: automerge Map of field values
	keyItems    = "items"    // List: automerge List of maps {value, checked}
	keyEntries  = "entries"  // Log: automerge List of maps {timestamp, message, ...}
	keySections = "sections" // Composite: automerge Map of section maps
	keyValue    = "value"
	keyChecked  = "checked"
)

// initNode creates the containers (and defaults) for schema s under node.
func initNode(node *automerge.Map, s schema.Schema) error {
	switch sc := schema.Deref(s).(type) {
	case schema.Text:
		return node.Set(keyContent, automerge.NewText(""))
	case schema.Map:
		fields := automerge.NewMap()
		if err := node.Set(keyFields, fields); err != nil {
			return err
		}
		for _, f := range sc.Fields {
			if err := initField(fields, f); err != nil {
				return err
			}
		}
		return nil
	case schema.List:
		return node.Set(keyItems, automerge.NewList())
	case schema.Log:
		return node.Set(keyEntries, automerge.NewList())
	case schema.Composite:
		secs := automerge.NewMap()
		if err := node.Set(keySections, secs); err != nil {
			return err
		}
		for _, sec := range sc.Sections {
			m := automerge.NewMap()
			if err := secs.Set(sec.Name, m); err != nil {
				return err
			}
			if err := initNode(m, sec.Schema); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown schema %T", ErrWrongSchema, s)
}

// initField creates a field's container (text, counter, list) or default.
func initField(fields *automerge.Map, f schema.FieldDef) error {
	switch f.Type {
	case schema.FieldText:
		def, _ := f.Default.(string)
		return fields.Set(f.Name, automerge.NewText(def))
	case schema.FieldCounter:
		def, _ := f.Default.(int64)
		return fields.Set(f.Name, automerge.NewCounter(def))
	case schema.FieldList:
		l := automerge.NewList()
		if err := fields.Set(f.Name, l); err != nil {
			return err
		}
		if def, ok := f.Default.([]any); ok {
			return l.Append(def...)
		}
		return nil
	}
	if f.Default != nil {
		return fields.Set(f.Name, toAutomerge(f.Default))
	}
	return nil
}

// toAutomerge converts a canonical schema value to what automerge stores.
// Timestamps keep millisecond precision (automerge's resolution).
func toAutomerge(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Truncate(time.Millisecond)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toAutomerge(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toAutomerge(e)
		}
		return out
	}
	return v
}

// readNode reads the Go value of schema s stored under node:
// string (Text), map[string]any (Map), []Item (List), []LogEntry (Log) or
// map[string]any of section values (Composite).
func readNode(node *automerge.Map, s schema.Schema) (any, error) {
	switch sc := schema.Deref(s).(type) {
	case schema.Text:
		t, err := getText(node, keyContent)
		if err != nil {
			return nil, err
		}
		return t.Get()
	case schema.Map:
		fields, err := getMap(node, keyFields)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(sc.Fields))
		for _, f := range sc.Fields {
			v, err := fields.Get(f.Name)
			if err != nil {
				return nil, err
			}
			gv, err := fromAutomerge(v)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			if gv != nil {
				out[f.Name] = normalizeRead(f.Type, gv)
			}
		}
		return out, nil
	case schema.List:
		l, err := getList(node, keyItems)
		if err != nil {
			return nil, err
		}
		vals, err := l.Values()
		if err != nil {
			return nil, err
		}
		items := make([]Item, 0, len(vals))
		for _, v := range vals {
			gv, err := fromAutomerge(v)
			if err != nil {
				return nil, err
			}
			m, _ := gv.(map[string]any)
			checked, _ := m[keyChecked].(bool)
			items = append(items, Item{Value: normalizeRead(sc.ItemType(), m[keyValue]), Checked: checked})
		}
		return items, nil
	case schema.Log:
		l, err := getList(node, keyEntries)
		if err != nil {
			return nil, err
		}
		vals, err := l.Values()
		if err != nil {
			return nil, err
		}
		entries := make([]LogEntry, 0, len(vals))
		for _, v := range vals {
			gv, err := fromAutomerge(v)
			if err != nil {
				return nil, err
			}
			m, _ := gv.(map[string]any)
			e := LogEntry{}
			e.Timestamp, _ = m[schema.LogTimestamp].(time.Time)
			e.Message, _ = m[schema.LogMessage].(string)
			for _, f := range sc.Entry {
				if fv, ok := m[f.Name]; ok && fv != nil {
					if e.Fields == nil {
						e.Fields = map[string]any{}
					}
					e.Fields[f.Name] = normalizeRead(f.Type, fv)
				}
			}
			entries = append(entries, e)
		}
		return entries, nil
	case schema.Composite:
		secs, err := getMap(node, keySections)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(sc.Sections))
		for _, sec := range sc.Sections {
			m, err := getMap(secs, sec.Name)
			if err != nil {
				return nil, err
			}
			v, err := readNode(m, sec.Schema)
			if err != nil {
				return nil, fmt.Errorf("section %q: %w", sec.Name, err)
			}
			out[sec.Name] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown schema %T", ErrWrongSchema, s)
}

// normalizeRead maps what automerge returns to the schema's canonical form
// (automerge may hand back int64 for a float that was whole, etc.).
func normalizeRead(t schema.FieldType, v any) any {
	if v == nil {
		return nil
	}
	if c, err := schema.Coerce(t, v); err == nil {
		return c
	}
	return v
}

// fromAutomerge converts a document value to plain Go values.
func fromAutomerge(v *automerge.Value) (any, error) {
	switch v.Kind() {
	case automerge.KindVoid, automerge.KindNull:
		return nil, nil
	case automerge.KindText:
		return v.Text().Get()
	case automerge.KindCounter:
		return v.Counter().Get()
	case automerge.KindTime:
		return v.Time().UTC(), nil
	case automerge.KindUint64:
		u := v.Uint64()
		if u > 1<<62 {
			return float64(u), nil
		}
		return int64(u), nil
	case automerge.KindMap:
		vals, err := v.Map().Values()
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(vals))
		for _, k := range keys {
			gv, err := fromAutomerge(vals[k])
			if err != nil {
				return nil, err
			}
			out[k] = gv
		}
		return out, nil
	case automerge.KindList:
		vals, err := v.List().Values()
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, len(vals))
		for _, e := range vals {
			gv, err := fromAutomerge(e)
			if err != nil {
				return nil, err
			}
			out = append(out, gv)
		}
		return out, nil
	case automerge.KindBool, automerge.KindStr, automerge.KindFloat64, automerge.KindInt64, automerge.KindBytes:
		return v.Interface(), nil
	}
	return nil, fmt.Errorf("%w: unsupported value kind %v", ErrCorrupt, v.Kind())
}

func getMap(node *automerge.Map, key string) (*automerge.Map, error) {
	v, err := node.Get(key)
	if err != nil {
		return nil, err
	}
	if v.Kind() != automerge.KindMap {
		return nil, fmt.Errorf("%w: %q is %v, want map", ErrCorrupt, key, v.Kind())
	}
	return v.Map(), nil
}

func getList(node *automerge.Map, key string) (*automerge.List, error) {
	v, err := node.Get(key)
	if err != nil {
		return nil, err
	}
	if v.Kind() != automerge.KindList {
		return nil, fmt.Errorf("%w: %q is %v, want list", ErrCorrupt, key, v.Kind())
	}
	return v.List(), nil
}

func getText(node *automerge.Map, key string) (*automerge.Text, error) {
	v, err := node.Get(key)
	if err != nil {
		return nil, err
	}
	if v.Kind() != automerge.KindText {
		return nil, fmt.Errorf("%w: %q is %v, want text", ErrCorrupt, key, v.Kind())
	}
	return v.Text(), nil
}

// sameValue reports whether two block values are the same, as
// reflect.DeepEqual does except that a nil and an empty list, object, list
// of items or log are the same: what a document reads, and what an edit
// leaves in the cached value (a list whose last item was deleted), may
// differ in that alone, and both render and write alike.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !sameValue(e, f) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case []Item:
		y, ok := b.([]Item)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Checked != y[i].Checked || !sameValue(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case []LogEntry:
		y, ok := b.([]LogEntry)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Timestamp != y[i].Timestamp || x[i].Message != y[i].Message || !sameValue(x[i].Fields, y[i].Fields) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// cloneValue deep-copies a model value so a prospective edit never aliases
// the cached one.
func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case []Item:
		out := make([]Item, len(x))
		for i, e := range x {
			out[i] = Item{Value: cloneValue(e.Value), Checked: e.Checked}
		}
		return out
	case []LogEntry:
		out := make([]LogEntry, len(x))
		for i, e := range x {
			out[i] = LogEntry{Timestamp: e.Timestamp, Message: e.Message}
			if e.Fields != nil {
				out[i].Fields = cloneValue(e.Fields).(map[string]any)
			}
		}
		return out
	}
	return v
}

// ensureContainers creates containers that a changed schema needs and the
// document lacks (new map fields, new sections). It reports whether it
// wrote anything.
func ensureContainers(node *automerge.Map, s schema.Schema) (bool, error) {
	switch sc := schema.Deref(s).(type) {
	case schema.Map:
		fields, err := getMap(node, keyFields)
		if err != nil {
			return false, err
		}
		wrote := false
		for _, f := range sc.Fields {
			v, err := fields.Get(f.Name)
			if err != nil {
				return wrote, err
			}
			if v.Kind() == automerge.KindVoid {
				if err := initField(fields, f); err != nil {
					return wrote, err
				}
				wrote = wrote || f.Default != nil || f.Type == schema.FieldText || f.Type == schema.FieldCounter || f.Type == schema.FieldList
			}
		}
		return wrote, nil
	case schema.Composite:
		secs, err := getMap(node, keySections)
		if err != nil {
			return false, err
		}
		wrote := false
		for _, sec := range sc.Sections {
			v, err := secs.Get(sec.Name)
			if err != nil {
				return wrote, err
			}
			if v.Kind() == automerge.KindVoid {
				m := automerge.NewMap()
				if err := secs.Set(sec.Name, m); err != nil {
					return wrote, err
				}
				if err := initNode(m, sec.Schema); err != nil {
					return wrote, err
				}
				wrote = true
				continue
			}
			if v.Kind() != automerge.KindMap {
				return wrote, fmt.Errorf("%w: section %q is not a map", ErrCorrupt, sec.Name)
			}
			w, err := ensureContainers(v.Map(), sec.Schema)
			if err != nil {
				return wrote, err
			}
			wrote = wrote || w
		}
		return wrote, nil
	}
	return false, nil
}
