package blocks_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

type permOp struct {
	name  string
	class string // append | write | admin
	setup func(t *testing.T, perm blocks.Permission) *blocks.Document
	run   func(d *blocks.Document, a blocks.Actor) error
}

func textDoc(t *testing.T, perm blocks.Permission) *blocks.Document {
	d := newDoc(t, schema.Text{}, perm)
	must(t, d.SetText("hello world", blocks.System))
	return d
}

func mapDoc(t *testing.T, perm blocks.Permission) *blocks.Document {
	return newDoc(t, schema.Map{Fields: []schema.FieldDef{
		{Name: "name", Type: schema.FieldString},
		{Name: "bio", Type: schema.FieldText},
		{Name: "tags", Type: schema.FieldList},
		{Name: "n", Type: schema.FieldCounter},
		{Name: "locked", Type: schema.FieldString, ReadOnly: true},
	}}, perm)
}

func listDoc(t *testing.T, perm blocks.Permission) *blocks.Document {
	d := newDoc(t, schema.List{Checkbox: true}, perm)
	must(t, d.PushItem("one", blocks.System))
	return d
}

func logDoc(t *testing.T, perm blocks.Permission) *blocks.Document {
	d := newDoc(t, schema.Log{}, perm)
	must(t, d.AppendLogEntry(map[string]any{"message": "a"}, blocks.System))
	must(t, d.AppendLogEntry(map[string]any{"message": "b"}, blocks.System))
	return d
}

func compositeDoc(t *testing.T, perm blocks.Permission) *blocks.Document {
	return newDoc(t, schema.Composite{Sections: []schema.Section{
		{Name: "open", Schema: schema.Text{}},
		{Name: "sealed", ReadOnly: true, Schema: schema.Text{}},
	}}, perm)
}

var permOps = []permOp{
	{"SetText", "write", textDoc, func(d *blocks.Document, a blocks.Actor) error { return d.SetText("bye", a) }},
	{"AppendText", "append", textDoc, func(d *blocks.Document, a blocks.Actor) error { return d.AppendText("!", a) }},
	{"ReplaceText", "write", textDoc, func(d *blocks.Document, a blocks.Actor) error {
		_, err := d.ReplaceText("world", "there", a)
		return err
	}},
	{"InsertLine", "write", textDoc, func(d *blocks.Document, a blocks.Actor) error { return d.InsertLine(1, "top", a) }},
	{"SetValue", "write", textDoc, func(d *blocks.Document, a blocks.Actor) error { return d.SetValue("v", a) }},
	{"Restore", "write", textDoc, func(d *blocks.Document, a blocks.Actor) error {
		h, _ := d.History()
		return d.Restore([]string{h[0].Hash}, a)
	}},
	{"SetField", "write", mapDoc, func(d *blocks.Document, a blocks.Actor) error { return d.SetField("name", "x", a) }},
	{"SetTextField", "write", mapDoc, func(d *blocks.Document, a blocks.Actor) error { return d.SetTextField("bio", "x", a) }},
	{"AppendToListField", "append", mapDoc, func(d *blocks.Document, a blocks.Actor) error { return d.AppendToListField("tags", "x", a) }},
	{"IncrementCounter", "append", mapDoc, func(d *blocks.Document, a blocks.Actor) error { return d.IncrementCounter("n", 1, a) }},
	{"PushItem", "append", listDoc, func(d *blocks.Document, a blocks.Actor) error { return d.PushItem("two", a) }},
	{"InsertItem", "write", listDoc, func(d *blocks.Document, a blocks.Actor) error { return d.InsertItem(0, "zero", a) }},
	{"DeleteItem", "write", listDoc, func(d *blocks.Document, a blocks.Actor) error { return d.DeleteItem(0, a) }},
	{"CheckItem", "write", listDoc, func(d *blocks.Document, a blocks.Actor) error { return d.CheckItem(0, true, a) }},
	{"AppendLogEntry", "append", logDoc, func(d *blocks.Document, a blocks.Actor) error {
		return d.AppendLogEntry(map[string]any{"message": "c"}, a)
	}},
	{"TrimLog", "admin", logDoc, func(d *blocks.Document, a blocks.Actor) error { _, err := d.TrimLog(1, a); return err }},
	{"SectionAppendText", "append", compositeDoc, func(d *blocks.Document, a blocks.Actor) error { return d.Section("open").AppendText("x", a) }},
	{"SectionSetText", "write", compositeDoc, func(d *blocks.Document, a blocks.Actor) error { return d.Section("open").SetText("x", a) }},
	{"AuthorizeDelete", "admin", textDoc, func(d *blocks.Document, a blocks.Actor) error { return d.Authorize(a, blocks.OpDelete) }},
	{"AuthorizeReconfigure", "admin", textDoc, func(d *blocks.Document, a blocks.Actor) error { return d.Authorize(a, blocks.OpReconfigure) }},
	// Schema-level read-only binds every agent permission.
	{"SetReadOnlyField", "readonly", mapDoc, func(d *blocks.Document, a blocks.Actor) error { return d.SetField("locked", "x", a) }},
	{"AppendReadOnlySection", "readonly", compositeDoc, func(d *blocks.Document, a blocks.Actor) error { return d.Section("sealed").AppendText("x", a) }},
}

func agentAllowed(perm blocks.Permission, class string) bool {
	switch class {
	case "append":
		return perm >= blocks.Append
	case "write":
		return perm >= blocks.ReadWrite
	case "admin":
		return perm == blocks.Admin
	}
	return false // readonly targets
}

func snapshot(t *testing.T, d *blocks.Document) []byte {
	b, err := d.Save()
	must(t, err)
	return b
}

func TestPermissionMatrix(t *testing.T) {
	perms := []blocks.Permission{blocks.ReadOnly, blocks.Partner, blocks.Human, blocks.Append, blocks.ReadWrite, blocks.Admin}
	actors := []struct {
		name  string
		actor blocks.Actor
	}{{"system", blocks.System}, {"agent", blocks.Agent}, {"self-by-id", blocks.Actor("agent-1")}, {"impostor", blocks.Actor("agent-2")}}
	for _, op := range permOps {
		for _, perm := range perms {
			for _, ac := range actors {
				t.Run(fmt.Sprintf("%s/%s/%s", op.name, perm, ac.name), func(t *testing.T) {
					d := op.setup(t, perm)
					before := snapshot(t, d)
					heads := d.Heads()
					want := false
					switch ac.name {
					case "system":
						want = true
					case "agent", "self-by-id":
						want = agentAllowed(perm, op.class)
					}
					err := op.run(d, ac.actor)
					if want {
						if err != nil {
							t.Fatalf("want allowed, got %v", err)
						}
						return
					}
					if !errors.Is(err, blocks.ErrPermission) {
						t.Fatalf("want ErrPermission, got %v", err)
					}
					if after := snapshot(t, d); !bytes.Equal(before, after) || fmt.Sprint(heads) != fmt.Sprint(d.Heads()) {
						t.Fatalf("denied %s changed the document", op.name)
					}
					if (perm == blocks.Partner || perm == blocks.Human) && ac.name == "agent" && op.class != "readonly" && op.class != "admin" {
						if !errors.Is(err, blocks.ErrNeedsApproval) {
							t.Fatalf("Partner/Human denial should match ErrNeedsApproval: %v", err)
						}
					}
				})
			}
		}
	}
}

func TestPartnerWritesGoThroughApprover(t *testing.T) {
	for _, perm := range []blocks.Permission{blocks.Partner, blocks.Human} {
		var asked []blocks.ApprovalRequest
		approve := true
		d := textDoc(t, perm)
		d.SetApprover(blocks.ApproverFunc(func(r blocks.ApprovalRequest) (bool, error) {
			asked = append(asked, r)
			// The approver runs without locks: it may read the document.
			_ = d.Render()
			return approve, nil
		}))
		must(t, d.AppendText(" ok", blocks.Agent))
		if got, _ := d.Text(); got != "hello world ok" {
			t.Fatalf("%s: approved write not applied: %q", perm, got)
		}
		approve = false
		before := snapshot(t, d)
		err := d.SetText("nope", blocks.Agent)
		if !errors.Is(err, blocks.ErrPermission) || !errors.Is(err, blocks.ErrNeedsApproval) {
			t.Fatalf("%s: denied approval err = %v", perm, err)
		}
		if !bytes.Equal(before, snapshot(t, d)) {
			t.Fatalf("%s: denied write changed the document", perm)
		}
		if len(asked) != 2 || asked[0].Op != blocks.OpAppendText || asked[0].Agent != "agent-1" || asked[0].Permission != perm {
			t.Fatalf("%s: approval requests = %+v", perm, asked)
		}
	}
}

func TestViewsShareOneDocument(t *testing.T) {
	owner := textDoc(t, blocks.Admin)
	guest := owner.View("guest", blocks.Append)
	if !owner.Same(guest) {
		t.Fatal("views should share the document")
	}
	must(t, guest.AppendText(" from guest", blocks.Agent))
	if err := guest.SetText("overwrite", blocks.Agent); !errors.Is(err, blocks.ErrPermission) {
		t.Fatalf("guest with Append rewrote text: %v", err)
	}
	if got, _ := owner.Text(); got != "hello world from guest" {
		t.Fatalf("owner sees %q", got)
	}
	h, err := owner.History()
	must(t, err)
	if last := h[len(h)-1]; last.Actor != "guest" || last.Op != blocks.OpAppendText {
		t.Fatalf("last change attributed to %q/%s", last.Actor, last.Op)
	}
}
