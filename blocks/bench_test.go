package blocks_test

import (
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

func benchDoc(b *testing.B, s schema.Schema, limit int) *blocks.Document {
	d, err := blocks.New(blocks.Info{Label: "bench", Type: blocks.Working, Schema: s, Permission: blocks.ReadWrite, Owner: "a", CharLimit: limit}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func BenchmarkAppendText(b *testing.B) {
	d := benchDoc(b, schema.Text{}, 1<<30)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.AppendText("0123456789 ", blocks.Agent); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSetField(b *testing.B) {
	d := benchDoc(b, schema.Map{Fields: []schema.FieldDef{{Name: "status", Type: schema.FieldString}, {Name: "n", Type: schema.FieldInteger}}}, 0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := d.SetField("n", i, blocks.Agent); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetText5000Diff rewrites one line of a 5,000-character text: the
// diff turns it into a small splice instead of a full rewrite.
func BenchmarkSetText5000Diff(b *testing.B) {
	d := benchDoc(b, schema.Text{}, 0)
	base := strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 110)[:4900]
	if err := d.SetText(base, blocks.System); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		txt := base[:2000] + strings.Repeat("x", i%7) + base[2000:]
		if err := d.SetText(txt, blocks.Agent); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	for _, size := range []int{100, 5000} {
		b.Run(map[int]string{100: "small", 5000: "5000chars"}[size], func(b *testing.B) {
			d := benchDoc(b, schema.Text{}, 0)
			if err := d.SetText(strings.Repeat("a", size-1)+"\n", blocks.System); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if len(d.Render()) != size {
					b.Fatal("bad render")
				}
			}
		})
	}
}

func BenchmarkSaveIncrementalAfterOneEdit(b *testing.B) {
	d := benchDoc(b, schema.Text{}, 1<<30)
	if err := d.SetText(strings.Repeat("a", 4000), blocks.System); err != nil {
		b.Fatal(err)
	}
	if _, err := d.SaveIncremental(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.AppendText("x", blocks.Agent); err != nil {
			b.Fatal(err)
		}
		if data, err := d.SaveIncremental(); err != nil || len(data) == 0 {
			b.Fatal("no incremental bytes", err)
		}
	}
}

func BenchmarkPendingChangesAfterOneEdit(b *testing.B) {
	d := benchDoc(b, schema.Text{}, 1<<30)
	if err := d.SetText(strings.Repeat("a", 4000), blocks.System); err != nil {
		b.Fatal(err)
	}
	_ = blockseam.MarkPersisted(d, d.Heads())
	b.ReportAllocs()
	for b.Loop() {
		if err := d.AppendText("x", blocks.Agent); err != nil {
			b.Fatal(err)
		}
		data, heads, err := d.PendingChanges()
		if err != nil || len(data) == 0 {
			b.Fatal("no pending bytes", err)
		}
		_ = blockseam.MarkPersisted(d, heads)
	}
}
