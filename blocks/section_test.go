package blocks_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

// sectionsDoc is a Composite block with one section of each kind.
func sectionsDoc(t *testing.T, perm blocks.Permission) *blocks.Document {
	t.Helper()
	return newDoc(t, schema.Composite{Sections: []schema.Section{
		{Name: "text", Schema: schema.Text{}},
		{Name: "map", Schema: schema.Map{Fields: []schema.FieldDef{
			{Name: "s", Type: schema.FieldString},
			{Name: "t", Type: schema.FieldText},
			{Name: "l", Type: schema.FieldList},
			{Name: "c", Type: schema.FieldCounter},
		}}},
		{Name: "list", Schema: schema.List{Checkbox: true}},
		{Name: "log", Schema: schema.Log{}},
		{Name: "sealed", ReadOnly: true, Schema: schema.Text{}},
	}}, perm)
}

// sectionOps is every operation of a Section, reads included.
var sectionOps = []struct {
	name string
	kind string // the section kind the operation needs
	run  func(s blocks.Section, a blocks.Actor) error
}{
	{"SetText", "text", func(s blocks.Section, a blocks.Actor) error { return s.SetText("x", a) }},
	{"AppendText", "text", func(s blocks.Section, a blocks.Actor) error { return s.AppendText("x", a) }},
	{"ReplaceText", "text", func(s blocks.Section, a blocks.Actor) error { _, err := s.ReplaceText("x", "y", a); return err }},
	{"InsertLine", "text", func(s blocks.Section, a blocks.Actor) error { return s.InsertLine(1, "x", a) }},
	{"Text", "text", func(s blocks.Section, _ blocks.Actor) error { _, err := s.Text(); return err }},
	{"SetField", "map", func(s blocks.Section, a blocks.Actor) error { return s.SetField("s", "x", a) }},
	{"SetTextField", "map", func(s blocks.Section, a blocks.Actor) error { return s.SetTextField("t", "x", a) }},
	{"AppendToListField", "map", func(s blocks.Section, a blocks.Actor) error { return s.AppendToListField("l", "x", a) }},
	{"IncrementCounter", "map", func(s blocks.Section, a blocks.Actor) error { return s.IncrementCounter("c", 1, a) }},
	{"Field", "map", func(s blocks.Section, _ blocks.Actor) error { _, err := s.Field("s"); return err }},
	{"PushItem", "list", func(s blocks.Section, a blocks.Actor) error { return s.PushItem("x", a) }},
	{"InsertItem", "list", func(s blocks.Section, a blocks.Actor) error { return s.InsertItem(0, "x", a) }},
	{"DeleteItem", "list", func(s blocks.Section, a blocks.Actor) error { return s.DeleteItem(0, a) }},
	{"CheckItem", "list", func(s blocks.Section, a blocks.Actor) error { return s.CheckItem(0, true, a) }},
	{"Items", "list", func(s blocks.Section, _ blocks.Actor) error { _, err := s.Items(); return err }},
	{"AppendLogEntry", "log", func(s blocks.Section, a blocks.Actor) error {
		return s.AppendLogEntry(map[string]any{"message": "x"}, a)
	}},
	{"LogEntries", "log", func(s blocks.Section, _ blocks.Actor) error { _, err := s.LogEntries(0); return err }},
	{"Value", "", func(s blocks.Section, _ blocks.Actor) error { _, err := s.Value(); return err }},
}

// A wrong section name is an ErrWrongSchema naming the block and the
// section, for every operation, and leaves the block as it was.
func TestSectionUnknownNameIsNamed(t *testing.T) {
	for _, op := range sectionOps {
		t.Run(op.name, func(t *testing.T) {
			d := sectionsDoc(t, blocks.ReadWrite)
			before := d.Heads()
			err := op.run(d.Section("nope"), blocks.Agent)
			if !errors.Is(err, blocks.ErrWrongSchema) {
				t.Fatalf("err = %v, want ErrWrongSchema", err)
			}
			if msg := err.Error(); !strings.Contains(msg, `"b"`) || !strings.Contains(msg, `"nope"`) {
				t.Errorf("error %q does not name block %q and section %q", msg, "b", "nope")
			}
			if !reflect.DeepEqual(d.Heads(), before) {
				t.Error("a failed section operation changed the block")
			}
		})
	}
}

// Each operation works on the section of its kind and, on a section of
// another kind, fails with ErrWrongSchema.
func TestSectionOperationsFitTheSectionKind(t *testing.T) {
	for _, op := range sectionOps {
		if op.kind == "" {
			continue
		}
		t.Run(op.name, func(t *testing.T) {
			d := sectionsDoc(t, blocks.ReadWrite)
			must(t, d.Section("list").PushItem("first", blocks.System))
			must(t, d.Section("text").SetText("x", blocks.System))
			if err := op.run(d.Section(op.kind), blocks.Agent); err != nil {
				t.Fatalf("on section %q: %v", op.kind, err)
			}
			other := "text"
			if op.kind == "text" {
				other = "map"
			}
			err := op.run(d.Section(other), blocks.Agent)
			if !errors.Is(err, blocks.ErrWrongSchema) {
				t.Fatalf("on section %q: err = %v, want ErrWrongSchema", other, err)
			}
		})
	}
}

// The section "" is the whole block: on a block without sections the
// Section("") operations are the Document's; on a Composite block both
// refuse a block-wide edit.
func TestSectionEmptyNameIsTheBlock(t *testing.T) {
	viaDoc, viaSection := textDoc(t, blocks.ReadWrite), textDoc(t, blocks.ReadWrite)
	must(t, viaDoc.AppendText(" more", blocks.Agent))
	must(t, viaSection.Section("").AppendText(" more", blocks.Agent))
	a, _ := viaDoc.Text()
	b, err := viaSection.Section("").Text()
	if err != nil || a != b {
		t.Fatalf("Section(\"\").Text() = %q, %v; Document.Text() = %q", b, err, a)
	}
	v, err := viaSection.Section("").Value()
	if err != nil || v != b {
		t.Fatalf("Section(\"\").Value() = %v, %v; want %q", v, err, b)
	}

	d := sectionsDoc(t, blocks.ReadWrite)
	for name, err := range map[string]error{
		"Document.AppendText":        d.AppendText("x", blocks.Agent),
		`Section("").AppendText`:     d.Section("").AppendText("x", blocks.Agent),
		`Section("").AppendLogEntry`: d.Section("").AppendLogEntry(map[string]any{"message": "x"}, blocks.Agent),
	} {
		if !errors.Is(err, blocks.ErrWrongSchema) || !strings.Contains(err.Error(), "needs a section") {
			t.Errorf("%s on a Composite block: err = %v, want ErrWrongSchema asking for a section", name, err)
		}
	}
}

// A section of a block without sections is refused, naming the block.
func TestSectionOfBlockWithoutSections(t *testing.T) {
	d := textDoc(t, blocks.ReadWrite)
	err := d.Section("notes").AppendText("x", blocks.Agent)
	if !errors.Is(err, blocks.ErrWrongSchema) || !strings.Contains(err.Error(), `block "b" has no sections`) {
		t.Fatalf("err = %v, want ErrWrongSchema: block \"b\" has no sections", err)
	}
}

// A Section writes through the view it came from: the view's permission
// and the schema's read-only sections bind it.
func TestSectionWritesThroughItsView(t *testing.T) {
	d := sectionsDoc(t, blocks.Admin)
	ro := d.View("bob", blocks.ReadOnly)
	if err := ro.Section("text").AppendText("x", blocks.Agent); !errors.Is(err, blocks.ErrPermission) {
		t.Errorf("a ReadOnly view's section append: err = %v, want ErrPermission", err)
	}
	err := d.Section("sealed").SetText("x", blocks.Agent)
	if !errors.Is(err, blocks.ErrPermission) || !strings.Contains(err.Error(), "sealed") {
		t.Errorf("agent write to a read-only section: err = %v, want ErrPermission naming it", err)
	}
	must(t, d.Section("sealed").SetText("by the system", blocks.System))
	if s := d.Section("sealed"); s.Document() != d || s.Name() != "sealed" {
		t.Errorf("Section(%q) = {%p %q}, want {%p %q}", "sealed", s.Document(), s.Name(), d, "sealed")
	}
}

// The reads of a Section see what its writes did.
func TestSectionReads(t *testing.T) {
	d := sectionsDoc(t, blocks.ReadWrite)
	must(t, d.Section("text").SetText("line", blocks.Agent))
	must(t, d.Section("map").SetField("s", "v", blocks.Agent))
	must(t, d.Section("map").IncrementCounter("c", 3, blocks.Agent))
	must(t, d.Section("list").PushItem("a", blocks.Agent))
	must(t, d.Section("list").PushItem("b", blocks.Agent))
	must(t, d.Section("list").CheckItem(1, true, blocks.Agent))
	must(t, d.Section("log").AppendLogEntry(map[string]any{"message": "one"}, blocks.Agent))
	must(t, d.Section("log").AppendLogEntry(map[string]any{"message": "two"}, blocks.Agent))

	if got, err := d.Section("text").Text(); err != nil || got != "line" {
		t.Errorf("Text = %q, %v", got, err)
	}
	if got, err := d.Section("map").Field("s"); err != nil || got != "v" {
		t.Errorf("Field(s) = %v, %v", got, err)
	}
	if got, err := d.Section("map").Field("c"); err != nil || got != int64(3) {
		t.Errorf("Field(c) = %#v, %v", got, err)
	}
	if _, err := d.Section("map").Field("zz"); !errors.Is(err, blocks.ErrWrongSchema) || !strings.Contains(err.Error(), `section "map" has no field "zz"`) {
		t.Errorf("Field(zz) err = %v, want ErrWrongSchema naming the section and the field", err)
	}
	items, err := d.Section("list").Items()
	if err != nil || len(items) != 2 || items[0].Value != "a" || items[0].Checked || !items[1].Checked {
		t.Errorf("Items = %+v, %v", items, err)
	}
	entries, err := d.Section("log").LogEntries(1)
	if err != nil || len(entries) != 1 || entries[0].Message != "two" {
		t.Errorf("LogEntries(1) = %+v, %v; want the newest", entries, err)
	}
	v, err := d.Section("list").Value()
	if err != nil || !reflect.DeepEqual(v, any(items)) {
		t.Errorf("Value = %#v, %v; want %#v", v, err, items)
	}
	if _, err := d.Section("map").Text(); !errors.Is(err, blocks.ErrWrongSchema) || !strings.Contains(err.Error(), `section "map"`) {
		t.Errorf("Text of a Map section: err = %v, want ErrWrongSchema naming the section", err)
	}
}
