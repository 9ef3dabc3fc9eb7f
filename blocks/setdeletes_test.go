package blocks_test

import (
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/amchunk"
	"github.com/engram-go/engram/schema"
)

// SetFieldDeletes and SetTextDeletes say what a whole-value write
// deletes, one operation each, as the write then does it: the shared
// start and end stay. A list written back with one more number keeps its
// items, whether they are held as int64 (as given) or come as float64
// (as JSON decodes them).
func TestSetDeletes(t *testing.T) {
	s := schema.Map{Fields: []schema.FieldDef{{Name: "l", Type: schema.FieldList}, {Name: "body", Type: schema.FieldText}}}
	d := newDoc(t, s, blocks.ReadWrite)
	ints := make([]any, 300)
	floats := make([]any, 301)
	for i := range ints {
		ints[i], floats[i] = int64(i%7), float64(i%7)
	}
	floats[300] = float64(9)
	must(t, d.SetField("l", ints, blocks.System))
	must(t, d.SetField("body", strings.Repeat("t", 500), blocks.System))
	for _, tc := range []struct {
		name    string
		field   string
		value   any
		deletes int
	}{
		{"one more number, as JSON decodes it", "l", floats, 0},
		{"the list emptied", "l", []any{}, 300},
		{"the list's last item changed", "l", append(append([]any(nil), ints[:299]...), int64(8)), 1},
		{"null", "l", nil, 0},
		{"the text cleared", "body", "", 500},
		{"the text with a word more", "body", strings.Repeat("t", 500) + " more", 0},
		{"a value the field refuses", "body", 42, 0},
		{"no such field", "nope", "x", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.Section("").SetFieldDeletes(tc.field, tc.value); got != tc.deletes {
				t.Errorf("SetFieldDeletes = %d, want %d", got, tc.deletes)
			}
		})
	}
	// The write does what SetFieldDeletes said: one more number is one
	// insertion, not 300 deletions and 301 insertions.
	heads := d.Heads()
	must(t, d.SetField("l", floats, blocks.System))
	data, _, err := d.ChangesSince(heads)
	must(t, err)
	c, err := amchunk.Measure(data, amchunk.Limits{})
	must(t, err)
	if c.Ops > 5 {
		t.Errorf("writing the list back with one more number made %d operations", c.Ops)
	}

	txt := newDoc(t, schema.Text{}, blocks.ReadWrite)
	must(t, txt.SetText("line one\nline two\nline three\n", blocks.System))
	for _, tc := range []struct {
		text    string
		deletes int
	}{{"line one\nline two\nline three\n", 0}, {"", 29}, {"line one\nline three\n", 9}} {
		if got := txt.Section("").SetTextDeletes(tc.text); got != tc.deletes {
			t.Errorf("SetTextDeletes(%q) = %d, want %d", tc.text, got, tc.deletes)
		}
	}
}
