package memory_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// pathResult is what one write path did with one edit: the error's
// sentinels, the durable value, the block's update rows and proposals.
type pathResult struct {
	errs      string
	value     any
	rendered  string // the blocks row's rendering
	rows      int
	lastActor string
	proposals []memory.Edit // the edits of the proposals kept
}

// renderedTime matches a log entry's time in a rendering: each run
// appends at its own.
var renderedTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

var pathSentinels = []struct {
	name string
	err  error
}{
	{"ErrNoMatch", memory.ErrNoMatch},
	{"ErrNeedsApproval", blocks.ErrNeedsApproval},
	{"ErrPermission", blocks.ErrPermission},
	{"ErrLimit", blocks.ErrLimit},
	{"ErrInvalid", schema.ErrInvalid},
	{"ErrWrongSchema", blocks.ErrWrongSchema},
	{"ErrOutOfRange", blocks.ErrOutOfRange},
	{"ErrInvalidArgument", memory.ErrInvalidArgument},
}

func errClass(err error) string {
	if err == nil {
		return "nil"
	}
	var out []string
	for _, s := range pathSentinels {
		if errors.Is(err, s.err) {
			out = append(out, s.name)
		}
	}
	if len(out) == 0 {
		return "other: " + err.Error()
	}
	return strings.Join(out, "+")
}

// The store's sugar methods, ApplyEdit and the
// *blocks.Document view give the same result and the same side effects
// for the same edit: error, value, update rows and their actor, proposals.
func TestWritePathsAgree(t *testing.T) {
	ctx := context.Background()
	mapSchema := schema.Map{Fields: []schema.FieldDef{
		{Name: "n", Type: schema.FieldInteger},
		{Name: "owner", Type: schema.FieldString, ReadOnly: true, Default: "ada"},
		{Name: "hits", Type: schema.FieldCounter},
	}}
	type tc struct {
		name  string
		spec  memory.BlockSpec
		share blocks.Permission // bob writes through this share; 0: ada writes her own block
		edit  memory.Edit
	}
	text := func(limit int) memory.BlockSpec {
		return memory.BlockSpec{Label: "b", Value: "hello world", CharLimit: limit}
	}
	cases := []tc{
		{"append", text(0), 0, memory.Edit{Op: blocks.OpAppendText, Text: "!"}},
		{"set text", text(0), 0, memory.Edit{Op: blocks.OpSetText, Text: "bye"}},
		{"replace", text(0), 0, memory.Edit{Op: blocks.OpReplaceText, Old: "world", Text: "there"}},
		{"replace without a match", text(0), 0, memory.Edit{Op: blocks.OpReplaceText, Old: "absent", Text: "x"}},
		{"replace with nothing", text(0), 0, memory.Edit{Op: blocks.OpReplaceText, Old: "", Text: "x"}},
		{"append over the limit", text(15), 0, memory.Edit{Op: blocks.OpAppendText, Text: " and more"}},
		{"append by an Append share", text(0), blocks.Append, memory.Edit{Op: blocks.OpAppendText, Text: "!"}},
		{"set text by an Append share", text(0), blocks.Append, memory.Edit{Op: blocks.OpSetText, Text: "bye"}},
		{"append by a Partner share", text(0), blocks.Partner, memory.Edit{Op: blocks.OpAppendText, Text: "!"}},
		{"set text by a Human share", text(0), blocks.Human, memory.Edit{Op: blocks.OpSetText, Text: "bye"}},
		{"over the limit by a Partner share", text(15), blocks.Partner, memory.Edit{Op: blocks.OpAppendText, Text: " and more"}},
		{"append to an own Partner block", memory.BlockSpec{Label: "b", Value: "hello world", Permission: blocks.Partner}, 0, memory.Edit{Op: blocks.OpAppendText, Text: "!"}},
		{"replace in an own Human block", memory.BlockSpec{Label: "b", Value: "hello world", Permission: blocks.Human}, 0, memory.Edit{Op: blocks.OpReplaceText, Old: "world", Text: "there"}},
		{"append by a ReadOnly share", text(0), blocks.ReadOnly, memory.Edit{Op: blocks.OpAppendText, Text: "!"}},
		{"replace without a match by a share", text(0), blocks.ReadWrite, memory.Edit{Op: blocks.OpReplaceText, Old: "absent", Text: "x"}},
		{"push item on a text block", text(0), 0, memory.Edit{Op: blocks.OpPushItem, Value: "x"}},
		{"string into an integer field", memory.BlockSpec{Label: "b", Schema: mapSchema}, 0, memory.Edit{Op: blocks.OpSetField, Field: "n", Value: "seven"}},
		{"set a read-only field", memory.BlockSpec{Label: "b", Schema: mapSchema}, 0, memory.Edit{Op: blocks.OpSetField, Field: "owner", Value: "bob"}},
		{"lower a counter by an Append share", memory.BlockSpec{Label: "b", Schema: mapSchema}, blocks.Append, memory.Edit{Op: blocks.OpIncrementCounter, Field: "hits", Delta: -1}},
		{"raise a counter by an Append share", memory.BlockSpec{Label: "b", Schema: mapSchema}, blocks.Append, memory.Edit{Op: blocks.OpIncrementCounter, Field: "hits", Delta: 2}},
		{"set a field by a Partner share", memory.BlockSpec{Label: "b", Schema: mapSchema}, blocks.Partner, memory.Edit{Op: blocks.OpSetField, Field: "n", Value: int64(4)}},
		{"check an item by a Human share", memory.BlockSpec{Label: "b", Schema: schema.List{Checkbox: true}, Value: []any{"a"}}, blocks.Human, memory.Edit{Op: blocks.OpCheckItem, Index: 0, Value: true}},
		{"set a value by a Partner share", text(0), blocks.Partner, memory.Edit{Op: blocks.OpSetValue, Value: "whole"}},
		{"delete a missing item", memory.BlockSpec{Label: "b", Schema: schema.List{}, Value: []any{"a"}}, 0, memory.Edit{Op: blocks.OpDeleteItem, Index: 5}},
		{"log entry", memory.BlockSpec{Label: "b", Type: blocks.Log, Schema: schema.Log{}}, 0, memory.Edit{Op: blocks.OpAppendLogEntry, Text: "went well"}},
		{"unknown op", text(0), 0, memory.Edit{Op: "frobnicate"}},
	}
	// sugar is the store's shorthand for an edit of the agent's own block,
	// where there is one.
	sugar := func(c *memory.Store, agent string, e memory.Edit) (func() error, bool) {
		switch e.Op {
		case blocks.OpSetText:
			return func() error { return c.Agent(agent).Block("b").SetText(ctx, e.Text) }, true
		case blocks.OpAppendText:
			return func() error { return c.Agent(agent).Block("b").Append(ctx, e.Text) }, true
		case blocks.OpReplaceText:
			return func() error {
				found, err := c.Agent(agent).Block("b").Replace(ctx, e.Old, e.Text)
				if found != (err == nil) {
					return fmt.Errorf("ReplaceInBlock: found %v with error %v", found, err)
				}
				return err
			}, true
		}
		return nil, false
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(t *testing.T, path string) (pathResult, bool) {
				c := openFile(t, filepath.Join(t.TempDir(), "w.db"), nil)
				if _, err := c.Agent("ada").CreateBlock(ctx, tc.spec); err != nil {
					t.Fatal(err)
				}
				agent, owner := "ada", "ada"
				if tc.share != 0 {
					agent, owner = "bob", "ada"
					if err := c.Agent("ada").Block("b").Share(ctx, "bob", tc.share); err != nil {
						t.Fatal(err)
					}
				}
				var err error
				switch path {
				case "sugar":
					f, ok := sugar(c, agent, tc.edit)
					if !ok || tc.share != 0 {
						return pathResult{}, false
					}
					err = f()
				case "ApplyEdit":
					err = c.Agent(agent).Shared(owner, "b").Apply(ctx, tc.edit)
				case "view":
					var doc *blocks.Document
					if tc.share != 0 {
						doc, err = c.Agent(agent).Shared(owner, "b").Doc(ctx)
					} else {
						doc, err = c.Agent(agent).Block("b").Doc(ctx)
					}
					if err != nil {
						t.Fatal(err)
					}
					var found bool
					found, err = tc.edit.Apply(doc.WithContext(ctx), blocks.Agent)
					if found != (err == nil) {
						t.Fatalf("view: found %v with error %v", found, err)
					}
				}
				// The block's value, and what the database holds: its
				// rendering, update rows and proposals.
				var r pathResult
				r.errs = errClass(err)
				doc, gerr := c.Agent("ada").Block("b").Doc(ctx)
				if gerr != nil {
					t.Fatal(gerr)
				}
				r.value, _ = doc.Value()
				if le, ok := r.value.([]blocks.LogEntry); ok {
					for i := range le {
						le[i].Timestamp = time.Time{} // each run appends at its own time
					}
				}
				if err := storeaccess.Backend(c).DB().QueryRow(`SELECT rendered FROM blocks WHERE label = 'b'`).Scan(&r.rendered); err != nil {
					t.Fatal(err)
				}
				r.rendered = renderedTime.ReplaceAllString(r.rendered, "TIME")
				if err := storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM block_updates u JOIN blocks b ON b.id = u.block_id WHERE b.label = 'b'`).Scan(&r.rows); err != nil {
					t.Fatal(err)
				}
				storeaccess.Backend(c).DB().QueryRow(`SELECT u.actor FROM block_updates u JOIN blocks b ON b.id = u.block_id WHERE b.label = 'b' ORDER BY u.seq DESC LIMIT 1`).Scan(&r.lastActor)
				ps, perr := c.Agent("ada").Block("b").Proposals(ctx)
				if perr != nil {
					t.Fatal(perr)
				}
				for _, p := range ps {
					r.proposals = append(r.proposals, p.Edit)
				}
				return r, true
			}
			var first pathResult
			var firstPath string
			for _, path := range []string{"ApplyEdit", "sugar", "view"} {
				r, ok := run(t, path)
				if !ok {
					continue
				}
				if firstPath == "" {
					first, firstPath = r, path
					continue
				}
				if !reflect.DeepEqual(r, first) {
					t.Errorf("%s and %s disagree:\n%s: %+v\n%s: %+v", firstPath, path, firstPath, first, path, r)
				}
			}
		})
	}
}
