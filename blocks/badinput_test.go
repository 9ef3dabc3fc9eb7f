package blocks_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

func TestBadInput(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, perm blocks.Permission) *blocks.Document
		run   func(d *blocks.Document) error
		want  error
		field string // the error message must name this
	}{
		{"wrong value type", mapDoc, func(d *blocks.Document) error { return d.SetField("name", 42, blocks.System) }, schema.ErrInvalid, "name"},
		{"unknown field", mapDoc, func(d *blocks.Document) error { return d.SetField("colour", "red", blocks.System) }, schema.ErrInvalid, "colour"},
		{"read-only field by agent", mapDoc, func(d *blocks.Document) error { return d.SetField("locked", "x", blocks.Agent) }, blocks.ErrPermission, "locked"},
		{"text op on text field of wrong type", mapDoc, func(d *blocks.Document) error { return d.SetTextField("name", "x", blocks.System) }, blocks.ErrWrongSchema, "name"},
		{"counter on non-counter", mapDoc, func(d *blocks.Document) error { return d.IncrementCounter("name", 1, blocks.System) }, blocks.ErrWrongSchema, "name"},
		{"list item of wrong type", mapDoc, func(d *blocks.Document) error {
			return d.AppendToListField("tags", map[string]any{"x": 1}, blocks.System)
		}, schema.ErrInvalid, "tags"},
		{"invalid utf8", textDoc, func(d *blocks.Document) error { return d.AppendText("a\xffb", blocks.System) }, schema.ErrInvalid, "UTF-8"},
		{"op on wrong schema", textDoc, func(d *blocks.Document) error { return d.PushItem("x", blocks.System) }, blocks.ErrWrongSchema, "list"},
		{"field on text block", textDoc, func(d *blocks.Document) error { return d.SetField("x", 1, blocks.System) }, blocks.ErrWrongSchema, "map"},
		{"log entry missing message", logDoc, func(d *blocks.Document) error {
			return d.AppendLogEntry(map[string]any{"text": "x"}, blocks.System)
		}, schema.ErrInvalid, "message"},
		{"log set value rewrites history", logDoc, func(d *blocks.Document) error {
			return d.SetValue([]blocks.LogEntry{{Message: "other"}}, blocks.System)
		}, blocks.ErrWrongSchema, "append-only"},
		{"list index out of range", listDoc, func(d *blocks.Document) error { return d.DeleteItem(5, blocks.System) }, blocks.ErrOutOfRange, "5"},
		{"check non-checkbox list", func(t *testing.T, p blocks.Permission) *blocks.Document {
			d := newDoc(t, schema.List{}, p)
			must(t, d.PushItem("a", blocks.System))
			return d
		}, func(d *blocks.Document) error { return d.CheckItem(0, true, blocks.System) }, blocks.ErrWrongSchema, "checkbox"},
		{"exceed max items", func(t *testing.T, p blocks.Permission) *blocks.Document {
			d := newDoc(t, schema.List{MaxItems: 1}, p)
			must(t, d.PushItem("a", blocks.System))
			return d
		}, func(d *blocks.Document) error { return d.PushItem("b", blocks.System) }, schema.ErrInvalid, "max_items 1"},
		{"exceed char limit (system too)", textDoc, func(d *blocks.Document) error {
			return d.AppendText(strings.Repeat("x", 5000), blocks.System)
		}, blocks.ErrLimit, "limit is 5000"},
		{"unknown section", compositeDoc, func(d *blocks.Document) error { return d.Section("nope").SetText("x", blocks.System) }, blocks.ErrWrongSchema, "nope"},
		{"composite op without section", compositeDoc, func(d *blocks.Document) error { return d.AppendText("x", blocks.System) }, blocks.ErrWrongSchema, "section"},
		{"read-only section by agent", compositeDoc, func(d *blocks.Document) error { return d.Section("sealed").SetText("x", blocks.Agent) }, blocks.ErrPermission, "sealed"},
		{"read-only field via SetValue", mapDoc, func(d *blocks.Document) error {
			return d.SetValue(map[string]any{"locked": "x"}, blocks.Agent)
		}, blocks.ErrPermission, "locked"},
		{"empty replace target", textDoc, func(d *blocks.Document) error { _, err := d.ReplaceText("", "x", blocks.System); return err }, schema.ErrInvalid, "empty"},
		{"insert line out of range", textDoc, func(d *blocks.Document) error { return d.InsertLine(9, "x", blocks.System) }, blocks.ErrOutOfRange, "line 9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.setup(t, blocks.ReadWrite)
			before := snapshot(t, d)
			err := c.run(d)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Fatalf("message %q should mention %q", err, c.field)
			}
			if errors.Is(err, blocks.ErrWrongSchema) && !strings.Contains(err.Error(), `block "b"`) {
				t.Fatalf("message %q should name the block", err)
			}
			if !bytes.Equal(before, snapshot(t, d)) {
				t.Fatal("refused write changed the document")
			}
		})
	}
}

func TestCharLimitCountsCharactersNotBytes(t *testing.T) {
	d, err := blocks.New(blocks.Info{Label: "tiny", Type: blocks.Core, Schema: schema.Text{}, Permission: blocks.ReadWrite, CharLimit: 5}, nil)
	must(t, err)
	must(t, d.SetText("ééééé", blocks.System)) // 5 runes, 10 bytes
	err = d.AppendText("é", blocks.System)
	if !errors.Is(err, blocks.ErrLimit) || !strings.Contains(err.Error(), "6 characters, limit is 5") {
		t.Fatalf("err = %v", err)
	}
	// Shrinking is always allowed, even when a lower limit is already exceeded.
	info := d.Info()
	info.CharLimit = 2
	must(t, d.SetInfo(info))
	must(t, d.SetText("éé", blocks.System))
}

func TestReplaceTextNoMatchChangesNothing(t *testing.T) {
	d := textDoc(t, blocks.ReadWrite)
	heads := d.Heads()
	ok, err := d.ReplaceText("absent", "x", blocks.Agent)
	if ok || !errors.Is(err, blocks.ErrNoMatch) {
		t.Fatalf("ReplaceText = %v, %v; want false, ErrNoMatch", ok, err)
	}
	if strings.Join(heads, ",") != strings.Join(d.Heads(), ",") {
		t.Fatal("no-match replace committed a change")
	}
	ok, err = d.ReplaceText("world", "there", blocks.Agent)
	if !ok || err != nil {
		t.Fatalf("ReplaceText = %v, %v", ok, err)
	}
	if got, _ := d.Text(); got != "hello there" {
		t.Fatalf("got %q", got)
	}
}

func TestNewRejectsBadInfo(t *testing.T) {
	for _, info := range []blocks.Info{
		{Type: blocks.Core, Schema: schema.Text{}, Permission: blocks.ReadWrite},
		{Label: "x", Type: "weird", Schema: schema.Text{}, Permission: blocks.ReadWrite},
		{Label: "x", Type: blocks.Core, Schema: schema.Text{}},
		{Label: "x", Type: blocks.Core, Permission: blocks.ReadWrite},
		{Label: "x", Type: blocks.Core, Schema: schema.Composite{}, Permission: blocks.ReadWrite},
	} {
		if _, err := blocks.New(info, nil); err == nil {
			t.Errorf("New(%+v) succeeded", info)
		}
	}
	if _, err := blocks.Load(blocks.Info{Label: "x", Type: blocks.Core, Schema: schema.Text{}, Permission: blocks.Admin}, []byte("garbage"), nil); !errors.Is(err, blocks.ErrCorrupt) {
		t.Errorf("Load(garbage) err = %v", err)
	}
}

func TestSetInfoSchemaEvolution(t *testing.T) {
	d := mapDoc(t, blocks.Admin)
	must(t, d.SetField("name", "Ada", blocks.Agent))
	info := d.Info()
	m := info.Schema.(schema.Map)
	m.Fields = append(append([]schema.FieldDef(nil), m.Fields...), schema.FieldDef{Name: "notes", Type: schema.FieldText, Default: "n/a"})
	info.Schema = m
	must(t, d.SetInfo(info))
	if v, _ := d.Field("notes"); v != "n/a" {
		t.Fatalf("new field default = %v", v)
	}
	must(t, d.SetTextField("notes", "hello", blocks.Agent))
	info.Schema = schema.Text{}
	if err := d.SetInfo(info); !errors.Is(err, blocks.ErrWrongSchema) {
		t.Fatalf("kind change err = %v", err)
	}
}

func TestPermissionParsing(t *testing.T) {
	for _, s := range []string{"ReadWrite", "read_write", "readwrite", "READ-WRITE"} {
		p, err := blocks.ParsePermission(s)
		if err != nil || p != blocks.ReadWrite {
			t.Errorf("ParsePermission(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := blocks.ParsePermission("root"); err == nil {
		t.Error("ParsePermission(root) succeeded")
	}
	if !(blocks.ReadOnly < blocks.Partner && blocks.Partner < blocks.Human && blocks.Human < blocks.Append && blocks.Append < blocks.ReadWrite && blocks.ReadWrite < blocks.Admin) {
		t.Error("permissions are not ordered")
	}
}

func TestNoOpWritesCommitNothing(t *testing.T) {
	d := textDoc(t, blocks.ReadWrite)
	heads := d.Heads()
	events := 0
	d.Subscribe(func(blocks.Event) { events++ })
	must(t, d.SetText("hello world", blocks.Agent))
	must(t, d.AppendText("", blocks.Agent))
	m := mapDoc(t, blocks.ReadWrite)
	mh := m.Heads()
	must(t, m.IncrementCounter("n", 0, blocks.Agent))
	must(t, m.SetField("name", nil, blocks.Agent))
	if strings.Join(heads, ",") != strings.Join(d.Heads(), ",") || strings.Join(mh, ",") != strings.Join(m.Heads(), ",") || events != 0 {
		t.Fatalf("no-op writes committed changes (events %d)", events)
	}
}
