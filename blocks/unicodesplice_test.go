package blocks_test

import (
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

func TestSmokeUnicodeSplices(t *testing.T) {
	d, err := blocks.New(blocks.Info{Label: "t", Type: blocks.Core, Schema: schema.Text{}, Permission: blocks.ReadWrite, Owner: "a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := []string{"héllo 😀 wörld", "héllo 😀🙃 wörld!", "line1\nline2 😀\nline3", "line1\nline2 changed\nline3\nline4", "x"}
	for _, s := range steps {
		if err := d.SetText(s, blocks.Agent); err != nil {
			t.Fatal(err)
		}
		got, _ := d.Text()
		if got != s {
			t.Fatalf("cached %q want %q", got, s)
		}
		b, _ := d.Save()
		d2, err := blocks.Load(d.Info(), b, nil)
		if err != nil {
			t.Fatal(err)
		}
		got2, _ := d2.Text()
		if got2 != s {
			t.Fatalf("reloaded %q want %q", got2, s)
		}
	}
}
