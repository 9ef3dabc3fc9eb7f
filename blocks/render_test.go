package blocks_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// fixedClock returns a clock that ticks one minute per call from a fixed
// instant, so log rendering is reproducible.
func fixedClock() func() time.Time {
	t := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Minute)
		return t
	}
}

func newDoc(t testing.TB, s schema.Schema, perm blocks.Permission) *blocks.Document {
	t.Helper()
	d, err := blocks.New(blocks.Info{Label: "b", Type: blocks.Working, Schema: s, Permission: perm, Owner: "agent-1"}, &blocks.Options{Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./blocks -run TestRenderGolden -update)", err)
	}
	if string(want) != got {
		t.Fatalf("%s: render differs from golden file\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func TestRenderGolden(t *testing.T) {
	longText := ""
	for i := 1; i <= 200; i++ {
		if i > 1 {
			longText += "\n"
		}
		longText += "line " + string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
	}
	cases := []struct {
		name  string
		build func(t *testing.T) *blocks.Document
	}{
		{"text", func(t *testing.T) *blocks.Document {
			d := newDoc(t, schema.Text{}, blocks.ReadWrite)
			must(t, d.SetText("The user prefers short answers.\nThey live in Lisbon.", blocks.Agent))
			must(t, d.AppendText("\nThey like jazz.", blocks.Agent))
			return d
		}},
		{"text_viewport", func(t *testing.T) *blocks.Document {
			d := newDoc(t, schema.Text{Viewport: &schema.Viewport{Start: 11, Lines: 20}}, blocks.ReadWrite)
			must(t, d.SetText(longText, blocks.System))
			return d
		}},
		{"text_viewport_fits", func(t *testing.T) *blocks.Document {
			d := newDoc(t, schema.Text{Viewport: &schema.Viewport{Start: 1, Lines: 20}}, blocks.ReadWrite)
			must(t, d.SetText("short\ntext", blocks.System))
			return d
		}},
		{"map", func(t *testing.T) *blocks.Document {
			d := newDoc(t, schema.Map{Fields: []schema.FieldDef{
				{Name: "name", Type: schema.FieldString},
				{Name: "status", Type: schema.FieldString, ReadOnly: true, Default: "active"},
				{Name: "bio", Type: schema.FieldText},
				{Name: "age", Type: schema.FieldInteger},
				{Name: "score", Type: schema.FieldNumber},
				{Name: "verified", Type: schema.FieldBoolean},
				{Name: "tags", Type: schema.FieldList},
				{Name: "visits", Type: schema.FieldCounter},
				{Name: "last_seen", Type: schema.FieldTimestamp},
				{Name: "prefs", Type: schema.FieldObject},
				{Name: "unset", Type: schema.FieldString},
			}}, blocks.ReadWrite)
			must(t, d.SetField("name", "Ada", blocks.Agent))
			must(t, d.SetTextField("bio", "Mathematician.", blocks.Agent))
			must(t, d.SetField("age", 36, blocks.Agent))
			must(t, d.SetField("score", 9.5, blocks.Agent))
			must(t, d.SetField("verified", true, blocks.Agent))
			must(t, d.AppendToListField("tags", "math", blocks.Agent))
			must(t, d.AppendToListField("tags", "engines", blocks.Agent))
			must(t, d.IncrementCounter("visits", 3, blocks.Agent))
			must(t, d.SetField("last_seen", "2026-02-03T04:05:06Z", blocks.Agent))
			must(t, d.SetField("prefs", map[string]any{"theme": "dark", "lang": "en"}, blocks.Agent))
			return d
		}},
		{"list", func(t *testing.T) *blocks.Document {
			d := newDoc(t, schema.List{}, blocks.ReadWrite)
			for _, s := range []string{"buy milk", "write tests", "ship"} {
				must(t, d.PushItem(s, blocks.Agent))
			}
			must(t, d.InsertItem(1, "review design", blocks.Agent))
			return d
		}},
		{"list_checkbox", func(t *testing.T) *blocks.Document {
			d := newDoc(t, schema.List{Checkbox: true}, blocks.ReadWrite)
			for _, s := range []string{"draft", "review", "merge"} {
				must(t, d.PushItem(s, blocks.Agent))
			}
			must(t, d.CheckItem(0, true, blocks.Agent))
			return d
		}},
		{"log_limit", func(t *testing.T) *blocks.Document {
			d := newDoc(t, schema.Log{DisplayLimit: 3, Entry: []schema.FieldDef{{Name: "level", Type: schema.FieldString}}}, blocks.Append)
			for i, m := range []string{"started", "loaded 12 blocks", "user said hi", "replied", "idle"} {
				e := map[string]any{"message": m}
				if i%2 == 0 {
					e["level"] = "info"
				}
				must(t, d.AppendLogEntry(e, blocks.Agent))
			}
			return d
		}},
		{"composite", func(t *testing.T) *blocks.Document {
			d := newDoc(t, schema.Composite{Sections: []schema.Section{
				{Name: "notes", Schema: schema.Text{}},
				{Name: "diagnostics", ReadOnly: true, Schema: schema.Map{Fields: []schema.FieldDef{{Name: "errors", Type: schema.FieldCounter}, {Name: "mode", Type: schema.FieldString, ReadOnly: true}}}},
				{Name: "todo", Schema: schema.List{Checkbox: true}},
				{Name: "events", Schema: schema.Log{DisplayLimit: 2}},
				{Name: "empty", Schema: schema.Text{}},
			}}, blocks.ReadWrite)
			must(t, d.Section("notes").SetText("Investigating the flaky test.", blocks.Agent))
			must(t, d.Section("notes").AppendText(" Probably timing.", blocks.Agent))
			must(t, d.Section("diagnostics").IncrementCounter("errors", 2, blocks.System))
			must(t, d.Section("diagnostics").SetField("mode", "debug", blocks.System))
			must(t, d.Section("todo").PushItem("add retries", blocks.Agent))
			must(t, d.Section("todo").PushItem("re-run CI", blocks.Agent))
			must(t, d.Section("todo").CheckItem(1, true, blocks.Agent))
			must(t, d.Section("events").AppendLogEntry(map[string]any{"message": "first"}, blocks.Agent))
			must(t, d.Section("events").AppendLogEntry(map[string]any{"message": "second"}, blocks.Agent))
			must(t, d.Section("events").AppendLogEntry(map[string]any{"message": "third"}, blocks.Agent))
			return d
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.build(t)
			got := d.Render()
			checkGolden(t, c.name, got)
			// Same heads, same bytes: after a save/load round trip too.
			b, err := d.Save()
			must(t, err)
			d2, err := blocks.Load(d.Info(), b, nil)
			must(t, err)
			if r := d2.Render(); r != got {
				t.Fatalf("render after reload differs:\n%s\nvs\n%s", r, got)
			}
		})
	}
}
