package blocks_test

import (
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
)

// Exported heads listed twice, or with an ancestor, or only older heads:
// a read-only field set after the export is still refused, and the
// untouched document loads. (Heads naming the outside change itself make
// it the block's own: the dump's metadata is trusted, see README.)
func TestLoadExportedOddHeads(t *testing.T) {
	d := mapDoc(t, blocks.ReadWrite)
	must(t, d.SetField("locked", "sys", blocks.System))
	old := d.Heads()
	must(t, d.SetField("name", "ada", blocks.Agent))
	h := d.Heads()
	data, err := d.Save()
	must(t, err)
	am, err := automerge.Load(data)
	must(t, err)
	fields, err := am.RootMap().Get("fields")
	must(t, err)
	must(t, fields.Map().Set("locked", "mallory"))
	_, err = am.Commit(`{"a":"system","op":"set_field"}`)
	must(t, err)
	forged := am.Save()
	info := d.Info()
	for name, heads := range map[string][]string{
		"exact":         h,
		"duplicate":     {h[0], h[0]},
		"ancestor+head": {old[0], h[0]},
		"ancestor only": old,
	} {
		if _, err := blocks.LoadExported(info, forged, heads, nil); err == nil {
			t.Errorf("%s: read-only field changed after the export came in", name)
		}
	}
	// Untouched, with ancestor and duplicate heads, loads.
	for name, heads := range map[string][]string{"dup": {h[0], h[0]}, "ancestor+head": {old[0], h[0]}, "old": old} {
		if _, err := blocks.LoadExported(info, data, heads, nil); err != nil {
			t.Errorf("%s: untouched document refused: %v", name, err)
		}
	}
}
