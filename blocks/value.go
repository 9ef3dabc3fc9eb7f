package blocks

import (
	"fmt"
	"reflect"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/schema"
)

// SetValue replaces the block's whole value (same forms as Value returns;
// List also accepts []any of item values, Composite a map of section
// values, missing sections left as they are). The change is written as the
// difference from the current value: texts are spliced, counters moved,
// unchanged items kept. Log blocks are append-only: the new value must
// extend the current entries. Read-only fields and sections must be left
// unchanged by agents.
func (d *Document) SetValue(v any, actor Actor) error {
	return d.setValue(OpSetValue, v, actor)
}

func (d *Document) setValue(op Op, v any, actor Actor) error {
	_, system, err := d.resolveActor(actor)
	if err != nil {
		return err
	}
	return d.mutate(actor, request{op: op, args: []any{v}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		next, err := normalizeValue(s, v, cur, d.c.now)
		if err != nil {
			return nil, nil, err
		}
		if !system {
			if what := changedReadOnly(s, cur, next); what != "" {
				return nil, nil, fmt.Errorf("%w: %s is read-only", ErrPermission, what)
			}
		}
		return next, func(node *automerge.Map) error { return writeNode(node, s, cur, next) }, nil
	})
}

// normalizeValue validates v for s and converts it to the model form.
func normalizeValue(s schema.Schema, v any, cur any, now func() time.Time) (any, error) {
	switch sc := schema.Deref(s).(type) {
	case schema.Text:
		if err := sc.Validate(v); err != nil {
			return nil, err
		}
		return v, nil
	case schema.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, sc.Validate(v)
		}
		out := make(map[string]any, len(m))
		for _, f := range sc.Fields {
			fv, err := sc.CoerceField(f.Name, m[f.Name])
			if err != nil {
				return nil, err
			}
			if fv != nil {
				out[f.Name] = fv
			}
		}
		for k := range m {
			if _, ok := sc.Field(k); !ok {
				_, err := sc.CoerceField(k, m[k])
				return nil, err
			}
		}
		return out, nil
	case schema.List:
		var raw []Item
		switch x := v.(type) {
		case []Item:
			raw = x
		default:
			vals, ok := x.([]any)
			if !ok {
				if ss, ok2 := x.([]string); ok2 {
					for _, s := range ss {
						vals = append(vals, s)
					}
				} else {
					return nil, sc.Validate(v)
				}
			}
			for _, e := range vals {
				raw = append(raw, Item{Value: e})
			}
		}
		if sc.MaxItems > 0 && len(raw) > sc.MaxItems {
			return nil, &schema.FieldError{Field: "items", Reason: fmt.Sprintf("%d items exceed max_items %d", len(raw), sc.MaxItems), Err: schema.ErrInvalid}
		}
		out := make([]Item, len(raw))
		for i, it := range raw {
			c, err := sc.CoerceItem(it.Value)
			if err != nil {
				return nil, err
			}
			out[i] = Item{Value: c, Checked: it.Checked && sc.Checkbox}
		}
		return out, nil
	case schema.Log:
		entries, ok := v.([]LogEntry)
		if !ok {
			return nil, fmt.Errorf("%w: log value must be []LogEntry", ErrWrongSchema)
		}
		old, _ := cur.([]LogEntry)
		if len(entries) < len(old) || !reflect.DeepEqual(normEntries(entries[:len(old)]), normEntries(old)) {
			return nil, fmt.Errorf("%w: log blocks are append-only; the new value must extend the current entries (use TrimLog to remove)", ErrWrongSchema)
		}
		out := append([]LogEntry(nil), old...)
		for _, e := range entries[len(old):] {
			in := map[string]any{schema.LogMessage: e.Message}
			if !e.Timestamp.IsZero() {
				in[schema.LogTimestamp] = e.Timestamp
			}
			for k, fv := range e.Fields {
				in[k] = fv
			}
			c, err := sc.CoerceEntry(in)
			if err != nil {
				return nil, err
			}
			le := LogEntry{Message: c[schema.LogMessage].(string)}
			ts, ok := c[schema.LogTimestamp]
			if !ok {
				ts = now()
			}
			le.Timestamp = toAutomerge(ts).(time.Time)
			for _, f := range sc.Entry {
				if fv, ok := c[f.Name]; ok {
					if le.Fields == nil {
						le.Fields = map[string]any{}
					}
					le.Fields[f.Name] = fv
				}
			}
			out = append(out, le)
		}
		return out, nil
	case schema.Composite:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, sc.Validate(v)
		}
		curM, _ := cur.(map[string]any)
		out := make(map[string]any, len(sc.Sections))
		for _, sec := range sc.Sections {
			sv, present := m[sec.Name]
			if !present {
				out[sec.Name] = cloneValue(curM[sec.Name])
				continue
			}
			nv, err := normalizeValue(sec.Schema, sv, curM[sec.Name], now)
			if err != nil {
				return nil, prefixSection(sec.Name, err)
			}
			out[sec.Name] = nv
		}
		for k := range m {
			if _, ok := sc.Section(k); !ok {
				return nil, &schema.FieldError{Field: k, Reason: "unknown section", Err: schema.ErrInvalid}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown schema", ErrWrongSchema)
}

func normEntries(es []LogEntry) []LogEntry {
	out := make([]LogEntry, len(es))
	for i, e := range es {
		out[i] = LogEntry{Timestamp: e.Timestamp.UTC(), Message: e.Message, Fields: e.Fields}
		if len(e.Fields) == 0 {
			out[i].Fields = nil
		}
	}
	return out
}

func prefixSection(section string, err error) error {
	if fe, ok := err.(*schema.FieldError); ok {
		cp := *fe
		if cp.Field == "" {
			cp.Field = section
		} else {
			cp.Field = section + "." + cp.Field
		}
		return &cp
	}
	return fmt.Errorf("section %q: %w", section, err)
}

// changedReadOnly names the first read-only field or section that differs
// between cur and next, or "".
func changedReadOnly(s schema.Schema, cur, next any) string {
	switch sc := schema.Deref(s).(type) {
	case schema.Map:
		cm, _ := cur.(map[string]any)
		nm, _ := next.(map[string]any)
		for _, f := range sc.Fields {
			if f.ReadOnly && !reflect.DeepEqual(cm[f.Name], nm[f.Name]) {
				return fmt.Sprintf("field %q", f.Name)
			}
		}
	case schema.Composite:
		cm, _ := cur.(map[string]any)
		nm, _ := next.(map[string]any)
		for _, sec := range sc.Sections {
			if sec.ReadOnly && !reflect.DeepEqual(cm[sec.Name], nm[sec.Name]) {
				return fmt.Sprintf("section %q", sec.Name)
			}
			if w := changedReadOnly(sec.Schema, cm[sec.Name], nm[sec.Name]); w != "" {
				return fmt.Sprintf("section %q %s", sec.Name, w)
			}
		}
	}
	return ""
}

// writeNode writes next over cur as the smallest set of CRDT operations.
func writeNode(node *automerge.Map, s schema.Schema, cur, next any) error {
	switch sc := schema.Deref(s).(type) {
	case schema.Text:
		t, err := getText(node, keyContent)
		if err != nil {
			return err
		}
		return spliceText(t, diffSplices(cur.(string), next.(string)))
	case schema.Map:
		fields, err := getMap(node, keyFields)
		if err != nil {
			return err
		}
		cm, nm := cur.(map[string]any), next.(map[string]any)
		for _, f := range sc.Fields {
			if err := writeField(fields, f, cm[f.Name], nm[f.Name]); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
		return nil
	case schema.List:
		l, err := getList(node, keyItems)
		if err != nil {
			return err
		}
		ci, ni := cur.([]Item), next.([]Item)
		p := 0
		for p < len(ci) && p < len(ni) && reflect.DeepEqual(ci[p], ni[p]) {
			p++
		}
		q := 0
		for q < len(ci)-p && q < len(ni)-p && reflect.DeepEqual(ci[len(ci)-1-q], ni[len(ni)-1-q]) {
			q++
		}
		for k := 0; k < len(ci)-p-q; k++ {
			if err := l.Delete(p); err != nil {
				return err
			}
		}
		for k, it := range ni[p : len(ni)-q] {
			elem := map[string]any{keyValue: toAutomerge(it.Value), keyChecked: it.Checked}
			if err := l.Insert(p+k, elem); err != nil {
				return err
			}
		}
		return nil
	case schema.Log:
		l, err := getList(node, keyEntries)
		if err != nil {
			return err
		}
		ce, ne := cur.([]LogEntry), next.([]LogEntry)
		// Appends leave ce a prefix of ne; a log with a retention also
		// rotates its oldest entries out, and then ce[k:] is the prefix.
		// (A new epoch's catch-up with the writes made while it was built,
		// and Reapply, catching the old epoch's document up with the new
		// epoch's value, meet both.) With no overlap at all, every entry
		// is written again.
		k := rotatedOut(ce, ne)
		for range k {
			if err := l.Delete(0); err != nil {
				return err
			}
		}
		for _, e := range ne[len(ce)-k:] {
			m := map[string]any{schema.LogTimestamp: e.Timestamp, schema.LogMessage: e.Message}
			for k, v := range e.Fields {
				m[k] = toAutomerge(v)
			}
			if err := l.Append(m); err != nil {
				return err
			}
		}
		return nil
	case schema.Composite:
		secs, err := getMap(node, keySections)
		if err != nil {
			return err
		}
		cm, nm := cur.(map[string]any), next.(map[string]any)
		for _, sec := range sc.Sections {
			if reflect.DeepEqual(cm[sec.Name], nm[sec.Name]) {
				continue
			}
			m, err := getMap(secs, sec.Name)
			if err != nil {
				return err
			}
			if err := writeNode(m, sec.Schema, cm[sec.Name], nm[sec.Name]); err != nil {
				return fmt.Errorf("section %q: %w", sec.Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown schema", ErrWrongSchema)
}

// rotatedOut returns how many of cur's oldest entries next no longer
// holds when next is cur with them dropped and entries appended: the
// least k for which cur[k:] is a prefix of next (len(cur) when none is).
func rotatedOut(cur, next []LogEntry) int {
	for k := range cur {
		rest := cur[k:]
		if len(rest) > len(next) || !cur[k].Timestamp.Equal(next[0].Timestamp) {
			continue
		}
		if reflect.DeepEqual(rest, next[:len(rest)]) {
			return k
		}
	}
	return len(cur)
}
