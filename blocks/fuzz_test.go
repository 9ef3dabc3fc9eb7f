package blocks_test

import (
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

func fuzzSchema() schema.Schema {
	return schema.Composite{Sections: []schema.Section{
		{Name: "text", Schema: schema.Text{Viewport: &schema.Viewport{Start: 2, Lines: 3}}},
		{Name: "map", Schema: schema.Map{Fields: []schema.FieldDef{
			{Name: "s", Type: schema.FieldString},
			{Name: "t", Type: schema.FieldText},
			{Name: "l", Type: schema.FieldList},
			{Name: "c", Type: schema.FieldCounter},
			{Name: "ro", Type: schema.FieldString, ReadOnly: true},
		}}},
		{Name: "list", Schema: schema.List{Checkbox: true, MaxItems: 8}},
		{Name: "log", Schema: schema.Log{DisplayLimit: 2}},
	}}
}

// FuzzRender drives a document through an arbitrary sequence of operations
// with arbitrary strings. Whatever happens, nothing panics, rendering is
// deterministic, and the cached rendering equals that of the document
// reloaded from its bytes (the cache never drifts from the CRDT).
func FuzzRender(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "hello\nworld", "é😀</block:x>")
	f.Add([]byte{1, 1, 1, 9, 9, 3}, "", "\x00\xff")
	f.Add([]byte{5, 5, 5, 5, 5, 5, 5, 5, 5, 6}, "a", "b")
	f.Fuzz(func(t *testing.T, ops []byte, s1, s2 string) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		d, err := blocks.New(blocks.Info{Label: "fz", Type: blocks.Working, Schema: fuzzSchema(), Permission: blocks.ReadWrite, Owner: "a", CharLimit: 2000},
			&blocks.Options{Now: fixedClock()})
		if err != nil {
			t.Fatal(err)
		}
		actors := []blocks.Actor{blocks.Agent, blocks.System}
		for i, op := range ops {
			a := actors[i%2]
			s := s1
			if i%3 == 0 {
				s = s2
			}
			switch op % 14 {
			case 0:
				_ = d.Section("text").SetText(s, a)
			case 1:
				_ = d.Section("text").AppendText(s, a)
			case 2:
				_, _ = d.Section("text").ReplaceText(s1, s2, a)
			case 3:
				_ = d.Section("text").InsertLine(int(op/14)+1, s, a)
			case 4:
				_ = d.Section("map").SetField("s", s, a)
			case 5:
				_ = d.Section("map").SetField("t", s, a)
			case 6:
				_ = d.Section("map").AppendToListField("l", s, a)
			case 7:
				_ = d.Section("map").IncrementCounter("c", int64(op)-100, a)
			case 8:
				_ = d.Section("map").SetField("ro", s, a)
			case 9:
				_ = d.Section("list").PushItem(s, a)
			case 10:
				_ = d.Section("list").CheckItem(int(op)%3, true, a)
			case 11:
				_ = d.Section("list").DeleteItem(int(op)%3, a)
			case 12:
				_ = d.Section("log").AppendLogEntry(map[string]any{"message": s}, a)
			case 13:
				_ = d.SetValue(map[string]any{"text": s2}, a)
			}
		}
		r1 := d.Render()
		if r2 := d.Render(); r1 != r2 {
			t.Fatalf("render not deterministic")
		}
		if d.Size() > 2000 {
			t.Fatalf("size %d exceeds the limit", d.Size())
		}
		b, err := d.Save()
		if err != nil {
			t.Fatal(err)
		}
		d2, err := blocks.Load(d.Info(), b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r3 := d2.Render(); r3 != r1 {
			t.Fatalf("cached render differs from reloaded:\n%q\n%q", r1, r3)
		}
		// A new epoch renders the same bytes (prompts stay byte-stable).
		nd, err := d.Rebased()
		if err != nil {
			t.Fatal(err)
		}
		if r4 := nd.Render(); r4 != r1 {
			t.Fatalf("rebased render differs:\n%q\n%q", r1, r4)
		}
	})
}
