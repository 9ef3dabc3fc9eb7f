package blocks

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/schema"
)

// errNoMatch aborts a ReplaceText or TrimLog plan without committing
// anything.
var errNoMatch = errors.New("no match")

func wrongSchema(s schema.Schema, op Op, want schema.Kind) error {
	return fmt.Errorf("%w: %s needs a %s schema, block has %s", ErrWrongSchema, op, want, s.Kind())
}

// ---- Text ----

// SetText replaces the text of a Text block. The change is written as the
// minimal splices from the current text, so concurrent edits elsewhere in
// the text survive and history stays small.
func (d *Document) SetText(text string, actor Actor) error {
	return d.setText("", text, actor)
}

// AppendText appends to a Text block (an appending operation).
func (d *Document) AppendText(text string, actor Actor) error {
	return d.appendText("", text, actor)
}

// ReplaceText replaces the first occurrence of old with new in a Text block.
// When old does not occur it changes nothing and returns false with an
// error wrapping ErrNoMatch, as every other write path (the store's
// ApplyEdit and ReplaceInBlock) does for the same edit.
func (d *Document) ReplaceText(old, new string, actor Actor) (bool, error) {
	return d.replaceText("", old, new, actor)
}

// InsertLine inserts text as a new line before 1-based line n of a Text
// block; n = number of lines + 1 appends it as the last line.
func (d *Document) InsertLine(n int, text string, actor Actor) error {
	return d.insertLine("", n, text, actor)
}

// Text returns the content of a Text block.
func (d *Document) Text() (string, error) { return d.text("") }

func (d *Document) text(section string) (string, error) {
	v, err := d.nodeValue(section, schema.KindText)
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func checkUTF8(field, s string) error {
	if !utf8.ValidString(s) {
		return &schema.FieldError{Field: field, Reason: "text is not valid UTF-8", Err: schema.ErrInvalid}
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return &schema.FieldError{Field: field, Reason: fmt.Sprintf("text holds a NUL byte at %d", i), Err: schema.ErrInvalid}
	}
	return nil
}

func (d *Document) setText(section, text string, actor Actor) error {
	return d.mutate(actor, request{op: OpSetText, section: section, args: []any{text}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		if s.Kind() != schema.KindText {
			return nil, nil, wrongSchema(s, OpSetText, schema.KindText)
		}
		if err := checkUTF8("content", text); err != nil {
			return nil, nil, err
		}
		old := cur.(string)
		return text, func(node *automerge.Map) error {
			t, err := getText(node, keyContent)
			if err != nil {
				return err
			}
			return spliceText(t, diffSplices(old, text))
		}, nil
	})
}

func spliceText(t *automerge.Text, sp []splice) error {
	for _, x := range sp {
		if err := t.Splice(x.pos, x.del, x.ins); err != nil {
			return err
		}
	}
	return nil
}

func (d *Document) appendText(section, text string, actor Actor) error {
	return d.mutate(actor, request{op: OpAppendText, section: section, args: []any{text}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		if s.Kind() != schema.KindText {
			return nil, nil, wrongSchema(s, OpAppendText, schema.KindText)
		}
		if err := checkUTF8("content", text); err != nil {
			return nil, nil, err
		}
		return d.c.text.concat(cur.(string), text), func(node *automerge.Map) error {
			t, err := getText(node, keyContent)
			if err != nil {
				return err
			}
			if text == "" {
				return nil
			}
			return t.Append(text)
		}, nil
	})
}

func (d *Document) replaceText(section, old, new string, actor Actor) (bool, error) {
	if old == "" {
		return false, &schema.FieldError{Field: "old", Reason: "text to replace is empty", Err: schema.ErrInvalid}
	}
	err := d.mutate(actor, request{op: OpReplaceText, section: section, args: []any{old, new}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		if s.Kind() != schema.KindText {
			return nil, nil, wrongSchema(s, OpReplaceText, schema.KindText)
		}
		if err := checkUTF8("new", new); err != nil {
			return nil, nil, err
		}
		text := cur.(string)
		i := strings.Index(text, old)
		if i < 0 {
			return nil, nil, errNoMatch
		}
		pos := utf8.RuneCountInString(text[:i])
		// Splice only the part that differs between old and new.
		sp := diffSplices(old, new)
		for k := range sp {
			sp[k].pos += pos
		}
		return text[:i] + new + text[i+len(old):], func(node *automerge.Map) error {
			t, err := getText(node, keyContent)
			if err != nil {
				return err
			}
			return spliceText(t, sp)
		}, nil
	})
	if errors.Is(err, errNoMatch) {
		return false, d.noMatch(section, old)
	}
	return err == nil, err
}

// noMatch is the error of a replace whose old text does not occur.
func (d *Document) noMatch(section, old string) error {
	if r := []rune(old); len(r) > 80 {
		old = string(r[:80]) + "…"
	}
	info := d.Info()
	where := fmt.Sprintf("block %q of agent %q", info.Label, info.Owner)
	if section != "" {
		where = fmt.Sprintf("section %q of %s", section, where)
	}
	return fmt.Errorf("%w: %q does not occur in %s", ErrNoMatch, old, where)
}

func (d *Document) insertLine(section string, n int, line string, actor Actor) error {
	return d.mutate(actor, request{op: OpInsertText, section: section, args: []any{n, line}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		if s.Kind() != schema.KindText {
			return nil, nil, wrongSchema(s, OpInsertText, schema.KindText)
		}
		if err := checkUTF8("content", line); err != nil {
			return nil, nil, err
		}
		text := cur.(string)
		lines := 1 + strings.Count(text, "\n")
		if text == "" {
			lines = 0
		}
		if n < 1 || n > lines+1 {
			return nil, nil, fmt.Errorf("%w: line %d (text has %d lines; use 1..%d)", ErrOutOfRange, n, lines, lines+1)
		}
		// Byte offset of the start of line n, and what to insert there.
		var at int
		var ins string
		switch {
		case text == "":
			ins = line
		case n == lines+1:
			at, ins = len(text), "\n"+line
		default:
			for k := 1; k < n; k++ {
				at += strings.IndexByte(text[at:], '\n') + 1
			}
			ins = line + "\n"
		}
		pos := utf8.RuneCountInString(text[:at])
		return text[:at] + ins + text[at:], func(node *automerge.Map) error {
			t, err := getText(node, keyContent)
			if err != nil {
				return err
			}
			return t.Insert(pos, ins)
		}, nil
	})
}

// ---- Map ----

// SetField sets a Map field. Text fields are diffed into splices, counter
// fields are moved by the difference (so concurrent increments still add up),
// list fields are replaced. A nil value clears an optional field.
func (d *Document) SetField(field string, value any, actor Actor) error {
	return d.setField("", field, value, actor, false)
}

// SetTextField sets a field of type text; it fails on fields of other types.
func (d *Document) SetTextField(field, text string, actor Actor) error {
	return d.setField("", field, text, actor, true)
}

// AppendToListField appends one item to a list field (an appending
// operation).
func (d *Document) AppendToListField(field string, item any, actor Actor) error {
	return d.appendToListField("", field, item, actor)
}

// IncrementCounter adds delta to a counter field. Concurrent increments from
// several writers add up.
func (d *Document) IncrementCounter(field string, delta int64, actor Actor) error {
	return d.incrementCounter("", field, delta, actor)
}

// Field returns one field's current value (nil when unset).
func (d *Document) Field(field string) (any, error) {
	return d.field("", field)
}

func (d *Document) field(section, field string) (any, error) {
	v, err := d.nodeValue(section, schema.KindMap)
	if err != nil {
		return nil, err
	}
	m, _ := d.nodeSchema(section)
	if _, ok := schema.Deref(m).(schema.Map).Field(field); !ok {
		if section != "" {
			return nil, fmt.Errorf("%w: block %q, section %q has no field %q", ErrWrongSchema, d.Label(), section, field)
		}
		return nil, fmt.Errorf("%w: block %q has no field %q", ErrWrongSchema, d.Label(), field)
	}
	return v.(map[string]any)[field], nil
}

func mapSchema(s schema.Schema, op Op) (schema.Map, error) {
	m, ok := schema.Deref(s).(schema.Map)
	if !ok {
		return schema.Map{}, wrongSchema(s, op, schema.KindMap)
	}
	return m, nil
}

// typedField returns the definition of a Map field that op needs to be of
// type want: an unknown field is schema.ErrInvalid (listing the known
// ones), a field of another type ErrWrongSchema.
func typedField(s schema.Schema, op Op, field string, want schema.FieldType) (schema.FieldDef, error) {
	ms, err := mapSchema(s, op)
	if err != nil {
		return schema.FieldDef{}, err
	}
	def, ok := ms.Field(field)
	if !ok {
		_, err := ms.CoerceField(field, nil) // the unknown-field error
		return def, err
	}
	if def.Type != want {
		return def, fmt.Errorf("%w: field %q is %s, not %s", ErrWrongSchema, field, def.Type, want)
	}
	return def, nil
}

func (d *Document) setField(section, field string, value any, actor Actor, textOnly bool) error {
	return d.mutate(actor, request{op: OpSetField, section: section, field: field, args: []any{value}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		ms, err := mapSchema(s, OpSetField)
		if err != nil {
			return nil, nil, err
		}
		def, ok := ms.Field(field)
		if ok && textOnly && def.Type != schema.FieldText {
			return nil, nil, fmt.Errorf("%w: field %q is %s, not text", ErrWrongSchema, field, def.Type)
		}
		v, err := ms.CoerceField(field, value)
		if err != nil {
			return nil, nil, err
		}
		m := cur.(map[string]any)
		old := m[field]
		if v == nil {
			delete(m, field)
		} else {
			m[field] = v
		}
		return m, func(node *automerge.Map) error {
			fields, err := getMap(node, keyFields)
			if err != nil {
				return err
			}
			return writeField(fields, def, old, v)
		}, nil
	})
}

// writeField writes one field's new value as the smallest CRDT change.
func writeField(fields *automerge.Map, def schema.FieldDef, old, v any) error {
	if reflect.DeepEqual(old, v) {
		return nil
	}
	if v == nil {
		return fields.Delete(def.Name)
	}
	switch def.Type {
	case schema.FieldText:
		t, err := getText(fields, def.Name)
		if err != nil {
			// Field container missing (schema gained the field later).
			return fields.Set(def.Name, automerge.NewText(v.(string)))
		}
		o, _ := old.(string)
		return spliceText(t, diffSplices(o, v.(string)))
	case schema.FieldCounter:
		cv, err := fields.Get(def.Name)
		if err != nil {
			return err
		}
		if cv.Kind() != automerge.KindCounter {
			return fields.Set(def.Name, automerge.NewCounter(v.(int64)))
		}
		o, _ := old.(int64)
		return cv.Counter().Inc(v.(int64) - o)
	case schema.FieldList:
		o, _ := old.([]any)
		l, err := getList(fields, def.Name)
		if err != nil || l.Len() != len(o) {
			// Missing, or not the list old was read from: set anew.
			l = automerge.NewList()
			if err := fields.Set(def.Name, l); err != nil {
				return err
			}
			return l.Append(v.([]any)...)
		}
		return spliceList(l, o, v.([]any))
	}
	return fields.Set(def.Name, toAutomerge(v))
}

// listAffixes is the length of the items old and next both start with,
// and of those they both end with after it.
func listAffixes(old, next []any) (prefix, suffix int) {
	return affixes(len(old), len(next), func(i, j int) bool { return sameItem(old[i], next[j]) })
}

// sameItem reports whether list items a and b are the same value: equal,
// or numbers of equal value (a document holds the integers it was given
// as int64, a JSON value decodes them as float64), so that writing a list
// back with one more number does not delete and insert every other.
func sameItem(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	x, okX := number(a)
	y, okY := number(b)
	return okX && okY && x == y
}

// number is v as a float64 when v is an integer or float that one holds
// exactly.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		f := float64(n)
		return f, int64(f) == n
	case uint64:
		f := float64(n)
		return f, uint64(f) == n
	case int:
		f := float64(n)
		return f, int(f) == n
	case float64:
		return n, true
	}
	return 0, false
}

// spliceList turns list l, holding old, into next in place: the items
// both start and end with stay, the ones between are deleted and the new
// ones inserted. Setting a new list instead would drop every item a
// concurrent change appended to the old one (a re-applied write-back
// edit on a new epoch and another writer's append).
func spliceList(l *automerge.List, old, next []any) error {
	p, s := listAffixes(old, next)
	for range len(old) - p - s {
		if err := l.Delete(p); err != nil {
			return err
		}
	}
	if ins := next[p : len(next)-s]; len(ins) > 0 {
		return l.Insert(p, ins...)
	}
	return nil
}

func (d *Document) appendToListField(section, field string, item any, actor Actor) error {
	return d.mutate(actor, request{op: OpAppendToListField, section: section, field: field, args: []any{item}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		if _, err := typedField(s, OpAppendToListField, field, schema.FieldList); err != nil {
			return nil, nil, err
		}
		c, err := schema.Coerce(schema.FieldList, []any{item})
		if err != nil {
			return nil, nil, &schema.FieldError{Field: field, Reason: err.Error(), Err: schema.ErrInvalid}
		}
		it := c.([]any)[0]
		m := cur.(map[string]any)
		old, _ := m[field].([]any)
		m[field] = append(append([]any(nil), old...), it)
		return m, func(node *automerge.Map) error {
			fields, err := getMap(node, keyFields)
			if err != nil {
				return err
			}
			l, err := getList(fields, field)
			if err != nil {
				l = automerge.NewList()
				if err := fields.Set(field, l); err != nil {
					return err
				}
			}
			return l.Append(toAutomerge(it))
		}, nil
	})
}

func (d *Document) incrementCounter(section, field string, delta int64, actor Actor) error {
	return d.mutate(actor, request{op: OpIncrementCounter, section: section, field: field, args: []any{delta}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		if _, err := typedField(s, OpIncrementCounter, field, schema.FieldCounter); err != nil {
			return nil, nil, err
		}
		m := cur.(map[string]any)
		old, _ := m[field].(int64)
		if (delta > 0 && old > math.MaxInt64-delta) || (delta < 0 && old < math.MinInt64-delta) {
			return nil, nil, &schema.FieldError{Field: field, Reason: fmt.Sprintf("counter %d + %d overflows int64", old, delta), Err: schema.ErrInvalid}
		}
		m[field] = old + delta
		return m, func(node *automerge.Map) error {
			fields, err := getMap(node, keyFields)
			if err != nil {
				return err
			}
			cv, err := fields.Get(field)
			if err != nil {
				return err
			}
			if cv.Kind() != automerge.KindCounter {
				return fields.Set(field, automerge.NewCounter(old+delta))
			}
			return cv.Counter().Inc(delta)
		}, nil
	})
}

// ---- List ----

// PushItem appends an item to a List block (an appending operation).
func (d *Document) PushItem(item any, actor Actor) error { return d.pushItem("", item, actor) }

// InsertItem inserts an item before 0-based index i (i = len appends).
func (d *Document) InsertItem(i int, item any, actor Actor) error {
	return d.insertItem("", i, item, actor)
}

// DeleteItem removes the item at 0-based index i.
func (d *Document) DeleteItem(i int, actor Actor) error { return d.deleteItem("", i, actor) }

// CheckItem sets the checked state of item i of a checkbox list.
func (d *Document) CheckItem(i int, checked bool, actor Actor) error {
	return d.checkItem("", i, checked, actor)
}

// Items returns the items of a List block.
func (d *Document) Items() ([]Item, error) { return d.items("") }

func (d *Document) items(section string) ([]Item, error) {
	v, err := d.nodeValue(section, schema.KindList)
	if err != nil {
		return nil, err
	}
	return v.([]Item), nil
}

func listSchema(s schema.Schema, op Op) (schema.List, error) {
	l, ok := schema.Deref(s).(schema.List)
	if !ok {
		return schema.List{}, wrongSchema(s, op, schema.KindList)
	}
	return l, nil
}

func (d *Document) pushItem(section string, item any, actor Actor) error {
	return d.mutate(actor, request{op: OpPushItem, section: section, args: []any{item}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		items, _ := cur.([]Item)
		return planInsertItem(s, OpPushItem, items, -1, item)
	})
}

func (d *Document) insertItem(section string, i int, item any, actor Actor) error {
	return d.mutate(actor, request{op: OpInsertItem, section: section, args: []any{i, item}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		items, _ := cur.([]Item)
		return planInsertItem(s, OpInsertItem, items, i, item)
	})
}

func planInsertItem(s schema.Schema, op Op, items []Item, at int, item any) (any, func(*automerge.Map) error, error) {
	ls, err := listSchema(s, op)
	if err != nil {
		return nil, nil, err
	}
	v, err := ls.CoerceItem(item)
	if err != nil {
		return nil, nil, err
	}
	if ls.MaxItems > 0 && len(items) >= ls.MaxItems {
		return nil, nil, &schema.FieldError{Field: "items", Reason: fmt.Sprintf("list is full (max_items %d)", ls.MaxItems), Err: schema.ErrInvalid}
	}
	if at < 0 {
		at = len(items)
	} else if at > len(items) {
		return nil, nil, fmt.Errorf("%w: insert at %d, list has %d items", ErrOutOfRange, at, len(items))
	}
	next := append(append(append([]Item(nil), items[:at]...), Item{Value: v}), items[at:]...)
	elem := map[string]any{keyValue: toAutomerge(v), keyChecked: false}
	return next, func(node *automerge.Map) error {
		l, err := getList(node, keyItems)
		if err != nil {
			return err
		}
		if at == len(items) {
			return l.Append(elem)
		}
		return l.Insert(at, elem)
	}, nil
}

func (d *Document) deleteItem(section string, i int, actor Actor) error {
	return d.mutate(actor, request{op: OpDeleteItem, section: section, args: []any{i}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		if _, err := listSchema(s, OpDeleteItem); err != nil {
			return nil, nil, err
		}
		items := cur.([]Item)
		if i < 0 || i >= len(items) {
			return nil, nil, fmt.Errorf("%w: item %d, list has %d items", ErrOutOfRange, i, len(items))
		}
		next := append(append([]Item(nil), items[:i]...), items[i+1:]...)
		return next, func(node *automerge.Map) error {
			l, err := getList(node, keyItems)
			if err != nil {
				return err
			}
			return l.Delete(i)
		}, nil
	})
}

func (d *Document) checkItem(section string, i int, checked bool, actor Actor) error {
	return d.mutate(actor, request{op: OpCheckItem, section: section, args: []any{i, checked}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		ls, err := listSchema(s, OpCheckItem)
		if err != nil {
			return nil, nil, err
		}
		if !ls.Checkbox {
			return nil, nil, fmt.Errorf("%w: list is not a checkbox list", ErrWrongSchema)
		}
		items := cur.([]Item)
		if i < 0 || i >= len(items) {
			return nil, nil, fmt.Errorf("%w: item %d, list has %d items", ErrOutOfRange, i, len(items))
		}
		items[i].Checked = checked
		return items, func(node *automerge.Map) error {
			l, err := getList(node, keyItems)
			if err != nil {
				return err
			}
			ev, err := l.Get(i)
			if err != nil {
				return err
			}
			if ev.Kind() != automerge.KindMap {
				return fmt.Errorf("%w: item %d is not a map", ErrCorrupt, i)
			}
			return ev.Map().Set(keyChecked, checked)
		}, nil
	})
}

// ---- Log ----

// AppendLogEntry appends an entry to a Log block. The entry needs a
// "message"; a missing "timestamp" is set to now.
func (d *Document) AppendLogEntry(entry map[string]any, actor Actor) error {
	return d.appendLogEntry("", entry, actor)
}

// LogEntries returns up to limit entries, newest first (limit <= 0: all).
func (d *Document) LogEntries(limit int) ([]LogEntry, error) {
	return d.logEntries("", limit)
}

// TrimLog removes the oldest entries so that at most keep remain, and returns
// the removed entries oldest first. Logs are otherwise append-only, for the
// system too; trimming is an Admin operation.
func (d *Document) TrimLog(keep int, actor Actor) ([]LogEntry, error) {
	var removed []LogEntry
	err := d.TrimLogWith(keep, actor, func(r []LogEntry) { removed = r })
	return removed, err
}

// TrimLogWith is TrimLog for a caller that writes the removed entries
// somewhere else in the transaction that writes the trim (both or
// neither). (A store's log rotation is part of the append instead; see
// LogRetention.) removed gets them, oldest first, while the
// trim is applied and before it is written; a store that applies the trim
// again on a fresher state calls it again, and the last call holds. It is
// not called when there is nothing to trim.
func (d *Document) TrimLogWith(keep int, actor Actor, removed func([]LogEntry)) error {
	err := d.mutate(actor, request{op: OpTrimLog, args: []any{keep}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		if s.Kind() != schema.KindLog {
			return nil, nil, wrongSchema(s, OpTrimLog, schema.KindLog)
		}
		if keep < 0 {
			return nil, nil, fmt.Errorf("%w: keep %d", ErrOutOfRange, keep)
		}
		entries := cur.([]LogEntry)
		n := len(entries) - keep
		if n <= 0 {
			return nil, nil, errNoMatch
		}
		removed(append([]LogEntry(nil), entries[:n]...))
		return entries[n:], func(node *automerge.Map) error {
			l, err := getList(node, keyEntries)
			if err != nil {
				return err
			}
			for k := 0; k < n; k++ {
				if err := l.Delete(0); err != nil {
					return err
				}
			}
			return nil
		}, nil
	})
	if errors.Is(err, errNoMatch) {
		return nil
	}
	return err
}

func (d *Document) appendLogEntry(section string, entry map[string]any, actor Actor) error {
	return d.mutate(actor, request{op: OpAppendLogEntry, section: section, args: []any{entry}}, func(s schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
		ls, ok := schema.Deref(s).(schema.Log)
		if !ok {
			return nil, nil, wrongSchema(s, OpAppendLogEntry, schema.KindLog)
		}
		e, err := ls.CoerceEntry(entry)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := e[schema.LogTimestamp]; !ok {
			e[schema.LogTimestamp] = d.c.now().UTC()
		}
		stored := toAutomerge(e).(map[string]any)
		le := LogEntry{Fields: map[string]any{}}
		for k, v := range stored {
			switch k {
			case schema.LogTimestamp:
				le.Timestamp = v.(time.Time).UTC()
			case schema.LogMessage:
				le.Message = v.(string)
			default:
				le.Fields[k] = v
			}
		}
		if len(le.Fields) == 0 {
			le.Fields = nil
		}
		next := append(cur.([]LogEntry), le)
		return next, func(node *automerge.Map) error {
			l, err := getList(node, keyEntries)
			if err != nil {
				return err
			}
			return l.Append(stored)
		}, nil
	})
}

func (d *Document) logEntries(section string, limit int) ([]LogEntry, error) {
	v, err := d.nodeValue(section, schema.KindLog)
	if err != nil {
		return nil, err
	}
	entries := v.([]LogEntry)
	order := newestFirst(entries)
	if limit > 0 && len(order) > limit {
		order = order[:limit]
	}
	out := make([]LogEntry, len(order))
	for i, idx := range order {
		out[i] = entries[idx]
	}
	return out, nil
}

// ---- reads ----

// nodeSchema returns the schema of a section ("" = the block).
func (d *Document) nodeSchema(section string) (schema.Schema, error) {
	s := d.Schema()
	if section == "" {
		return s, nil
	}
	c, ok := schema.Deref(s).(schema.Composite)
	if !ok {
		return nil, fmt.Errorf("%w: block %q has no sections", ErrWrongSchema, d.Label())
	}
	sec, ok := c.Section(section)
	if !ok {
		return nil, fmt.Errorf("%w: block %q has no section %q", ErrWrongSchema, d.Label(), section)
	}
	return sec.Schema, nil
}

// nodeValue returns a copy of the value of the block or one section,
// checking that its schema is of kind want.
func (d *Document) nodeValue(section string, want schema.Kind) (any, error) {
	s, err := d.nodeSchema(section)
	if err != nil {
		return nil, err
	}
	if s.Kind() != want {
		if section != "" {
			return nil, fmt.Errorf("%w: block %q, section %q: want a %s schema, have %s", ErrWrongSchema, d.Label(), section, want, s.Kind())
		}
		return nil, fmt.Errorf("%w: block %q: want a %s schema, have %s", ErrWrongSchema, d.Label(), want, s.Kind())
	}
	v, err := d.Value()
	if err != nil {
		return nil, err
	}
	if section != "" {
		return v.(map[string]any)[section], nil
	}
	return v, nil
}
