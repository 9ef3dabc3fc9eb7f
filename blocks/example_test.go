package blocks_test

import (
	"errors"
	"fmt"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

func Example() {
	doc, _ := blocks.New(blocks.Info{
		Label: "persona", Type: blocks.Core, Schema: schema.Text{},
		Permission: blocks.Append, Owner: "entropy",
	}, nil)
	_ = doc.SetText("I break tasks down.", blocks.System)
	_ = doc.AppendText(" I like small steps.", blocks.Agent)
	err := doc.SetText("I do whatever.", blocks.Agent) // Append may not rewrite
	fmt.Println(doc.Render())
	fmt.Println(errors.Is(err, blocks.ErrPermission))
	// Output:
	// I break tasks down. I like small steps.
	// true
}

func ExampleDocument_Merge() {
	base, _ := blocks.New(blocks.Info{Label: "stats", Type: blocks.Working, Permission: blocks.ReadWrite,
		Schema: schema.Map{Fields: []schema.FieldDef{{Name: "visits", Type: schema.FieldCounter}}}}, nil)
	a, _ := base.Fork()
	b, _ := base.Fork()
	_ = a.IncrementCounter("visits", 3, blocks.System)
	_ = b.IncrementCounter("visits", 4, blocks.System)
	_ = a.Merge(b)
	fmt.Println(a.Render())
	// Output:
	// visits: 7
}

func ExampleDocument_PushItem() {
	todo, _ := blocks.New(blocks.Info{Label: "todo", Type: blocks.Working, Permission: blocks.ReadWrite,
		Schema: schema.List{Checkbox: true}, Owner: "a"}, nil)
	_ = todo.PushItem("write tests", blocks.Agent)
	_ = todo.PushItem("ship", blocks.Agent)
	_ = todo.CheckItem(0, true, blocks.Agent)
	fmt.Println(todo.Render())
	// Output:
	// [x] write tests
	// [ ] ship
}

func ExampleDocument_Section() {
	doc, _ := blocks.New(blocks.Info{Label: "status", Type: blocks.Core, Permission: blocks.ReadWrite, Owner: "a",
		Schema: schema.Composite{Sections: []schema.Section{
			{Name: "notes", Schema: schema.Text{}},
			{Name: "health", ReadOnly: true, Schema: schema.Map{Fields: []schema.FieldDef{{Name: "errors", Type: schema.FieldInteger}}}},
			{Name: "todo", Schema: schema.List{Checkbox: true}},
		}}}, nil)
	_ = doc.Section("notes").SetText("All good.", blocks.Agent)
	_ = doc.Section("health").SetField("errors", 0, blocks.System)
	todo := doc.Section("todo")
	_ = todo.PushItem("ship", blocks.Agent)
	_ = todo.CheckItem(0, true, blocks.Agent)
	fmt.Println(doc.Render())
	// A read-only section binds agents; a section the block does not have
	// is named in the error, and so is a block-wide edit of a composite.
	fmt.Println(doc.Section("health").SetField("errors", 5, blocks.Agent) != nil)
	fmt.Println(doc.Section("nots").AppendText("!", blocks.Agent))
	fmt.Println(doc.AppendText("!", blocks.Agent))
	// Output:
	// === notes ===
	// All good.
	//
	// === health [read-only] ===
	// errors: 0
	//
	// === todo ===
	// [x] ship
	// true
	// blocks: operation does not fit the block schema: block "status" has no section "nots"
	// blocks: operation does not fit the block schema: block "status" is composite; append_text needs a section (Document.Section)
}

// A caller holding an optional section name (a tool argument) addresses
// both kinds of block one way: the section "" is the whole block.
func ExampleSection() {
	notes, _ := blocks.New(blocks.Info{Label: "notes", Type: blocks.Core, Permission: blocks.ReadWrite, Owner: "a",
		Schema: schema.Text{}}, nil)
	desk, _ := blocks.New(blocks.Info{Label: "desk", Type: blocks.Core, Permission: blocks.ReadWrite, Owner: "a",
		Schema: schema.Composite{Sections: []schema.Section{{Name: "notes", Schema: schema.Text{}}}}}, nil)
	for _, target := range []struct {
		doc     *blocks.Document
		section string
	}{{notes, ""}, {desk, "notes"}} {
		sec := target.doc.Section(target.section)
		_ = sec.AppendText("remember the milk", blocks.Agent)
		text, _ := sec.Text()
		fmt.Printf("%s/%s: %s\n", target.doc.Label(), sec.Name(), text)
	}
	// Output:
	// notes/: remember the milk
	// desk/notes: remember the milk
}

func ExampleDocument_History() {
	doc, _ := blocks.New(blocks.Info{Label: "n", Type: blocks.Core, Schema: schema.Text{}, Permission: blocks.ReadWrite, Owner: "ada"}, nil)
	v1 := doc.Heads()
	_ = doc.AppendText("draft", blocks.Agent)
	_ = doc.Restore(v1, blocks.System)
	h, _ := doc.History()
	for _, c := range h {
		fmt.Println(c.Actor, c.Op)
	}
	// Output:
	// system create
	// ada append_text
	// system restore
}
