// Command quickstart is the README's first command: it creates memory blocks
// of every schema, edits them as the system and as an agent, merges two
// concurrent replicas of one block, and prints what a model would see.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	persona, err := blocks.New(blocks.Info{Label: "persona", Type: blocks.Core, Schema: schema.Text{},
		Permission: blocks.Append, Owner: "entropy", Description: "Who the agent is"}, nil)
	if err != nil {
		return err
	}
	if err := persona.SetText("I am Entropy, a task breakdown specialist.", blocks.System); err != nil {
		return err
	}
	if err := persona.AppendText(" I prefer small, testable steps.", blocks.Agent); err != nil {
		return err
	}
	// Append permission: the agent may add, not rewrite.
	if err := persona.SetText("I am someone else.", blocks.Agent); errors.Is(err, blocks.ErrPermission) {
		fmt.Println("denied as expected:", err)
	}

	profile, err := blocks.New(blocks.Info{Label: "user_profile", Type: blocks.Core, Permission: blocks.ReadWrite, Owner: "entropy",
		Schema: schema.Map{Fields: []schema.FieldDef{
			{Name: "name", Type: schema.FieldString},
			{Name: "plan", Type: schema.FieldString, ReadOnly: true, Default: "pro"},
			{Name: "sessions", Type: schema.FieldCounter},
		}}}, nil)
	if err != nil {
		return err
	}
	_ = profile.SetField("name", "Ada", blocks.Agent)
	_ = profile.IncrementCounter("sessions", 1, blocks.Agent)

	tasks, err := blocks.New(blocks.Info{Label: "tasks", Type: blocks.Working, Permission: blocks.ReadWrite, Owner: "entropy",
		Schema: schema.List{Checkbox: true, MaxItems: 20}}, nil)
	if err != nil {
		return err
	}
	for _, t := range []string{"outline the plan", "write the tests", "ship it"} {
		if err := tasks.PushItem(t, blocks.Agent); err != nil {
			return err
		}
	}
	_ = tasks.CheckItem(0, true, blocks.Agent)

	events, err := blocks.New(blocks.Info{Label: "events", Type: blocks.Log, Permission: blocks.Append, Owner: "entropy",
		Schema: schema.Log{DisplayLimit: 2}}, nil)
	if err != nil {
		return err
	}
	for _, m := range []string{"session started", "user asked for a plan", "plan delivered"} {
		if err := events.AppendLogEntry(map[string]any{"message": m}, blocks.Agent); err != nil {
			return err
		}
	}

	// Two replicas edit the same block concurrently; merging keeps both.
	a, _ := persona.Fork()
	b, _ := persona.Fork()
	_ = a.AppendText(" (edited in replica A)", blocks.System)
	_ = b.AppendText(" (edited in replica B)", blocks.System)
	if err := a.Merge(b); err != nil {
		return err
	}
	if err := persona.Merge(a); err != nil {
		return err
	}

	for _, d := range []*blocks.Document{persona, profile, tasks, events} {
		fmt.Printf("<block:%s permission=%q>\n%s\n</block:%s>\n\n", d.Label(), d.Permission(), d.Render(), d.Label())
	}
	h, _ := persona.History()
	fmt.Printf("persona has %d changes; last by %s (%s)\n", len(h), h[len(h)-1].Actor, h[len(h)-1].Op)
	return nil
}
