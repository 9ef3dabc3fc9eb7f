package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

type proposeEditArgs struct {
	Label   string          `json:"label" jsonschema_description:"Label of the block, as in its <block:LABEL> tag."`
	Owner   string          `json:"owner,omitempty" jsonschema_description:"The agent or person that owns the block, as in shared_from=\"OWNER\". Omit for your own blocks."`
	Op      string          `json:"op" jsonschema:"enum=set_text,enum=append_text,enum=replace_text,enum=insert_text,enum=set_field,enum=append_to_list_field,enum=increment_counter,enum=push_item,enum=insert_item,enum=delete_item,enum=check_item,enum=append_log_entry" jsonschema_description:"The edit: set_text (text), append_text (text), replace_text (old, text), insert_text (index = line number, text), set_field (field, value), append_to_list_field (field, value), increment_counter (field, delta), push_item (value), insert_item (index, value), delete_item (index), check_item (index, value true or false), append_log_entry (text = message, value = optional extra fields object)."`
	Section string          `json:"section,omitempty" jsonschema_description:"Only for a block with sections (shown with === name === headers): the section to edit."`
	Field   string          `json:"field,omitempty" jsonschema_description:"Field name, for set_field, append_to_list_field and increment_counter."`
	Text    *string         `json:"text,omitempty" jsonschema_description:"Text for set_text, append_text, insert_text and append_log_entry; the replacement for replace_text."`
	Old     string          `json:"old,omitempty" jsonschema_description:"For replace_text: the exact text to replace; it must occur exactly once."`
	Value   json.RawMessage `json:"value,omitempty" jsonschema_description:"Value for set_field, append_to_list_field, push_item and insert_item; true or false for check_item."`
	Index   *int            `json:"index,omitempty" jsonschema_description:"For insert_text: the 1-based line number the new line gets. For insert_item, delete_item and check_item: the 1-based item number as shown in the list (1. item)."`
	Delta   *int64          `json:"delta,omitempty" jsonschema_description:"For increment_counter: the amount to add (negative to subtract)."`
	Reason  string          `json:"reason" jsonschema_description:"Why the change should be made, for whoever approves it."`
}

// buildEdit turns propose_edit arguments into a memory.Edit, checking that
// the op has what it needs.
func buildEdit(a *proposeEditArgs) (memory.Edit, error) {
	e := memory.Edit{Op: blocks.Op(a.Op), Section: a.Section, Field: a.Field, Old: a.Old}
	if a.Text != nil {
		e.Text = *a.Text
	}
	v, err := decodeValue(a.Value)
	if err != nil {
		return e, err
	}
	e.Value = v
	if a.Delta != nil {
		e.Delta = *a.Delta
	}
	need := func(ok bool, what string) error {
		if !ok {
			return modelErrorf("op %s needs %s", a.Op, what)
		}
		return nil
	}
	item := func() error {
		if err := need(a.Index != nil, "index (the 1-based item number)"); err != nil {
			return err
		}
		if *a.Index < 1 {
			return modelErrorf("index %d: item numbers start at 1", *a.Index)
		}
		e.Index = *a.Index - 1
		return nil
	}
	field := func() error { return need(strings.TrimSpace(a.Field) != "", "field") }
	switch e.Op {
	case blocks.OpSetText:
		return e, need(a.Text != nil, "text")
	case blocks.OpAppendText:
		return e, need(a.Text != nil && *a.Text != "", "text")
	case blocks.OpReplaceText:
		if err := need(a.Old != "", "old (the exact text to replace)"); err != nil {
			return e, err
		}
		return e, need(a.Text != nil, "text (the replacement; \"\" to delete)")
	case blocks.OpInsertText:
		if err := need(a.Index != nil, "index (the 1-based line number)"); err != nil {
			return e, err
		}
		e.Index = *a.Index
		return e, need(a.Text != nil, "text")
	case blocks.OpSetField:
		if err := field(); err != nil {
			return e, err
		}
		return e, need(len(a.Value) > 0, "value")
	case blocks.OpAppendToListField:
		if err := field(); err != nil {
			return e, err
		}
		return e, need(v != nil, "value")
	case blocks.OpIncrementCounter:
		if err := field(); err != nil {
			return e, err
		}
		return e, need(a.Delta != nil, "delta")
	case blocks.OpPushItem:
		return e, need(v != nil, "value (the item)")
	case blocks.OpInsertItem:
		if err := item(); err != nil {
			return e, err
		}
		return e, need(v != nil, "value (the item)")
	case blocks.OpDeleteItem:
		return e, item()
	case blocks.OpCheckItem:
		if err := item(); err != nil {
			return e, err
		}
		_, ok := v.(bool)
		return e, need(ok, "value true (checked) or false (unchecked)")
	case blocks.OpAppendLogEntry:
		if err := need(a.Text != nil && strings.TrimSpace(*a.Text) != "", "text (the message)"); err != nil {
			return e, err
		}
		entry := map[string]any{}
		if v != nil {
			fields, ok := v.(map[string]any)
			if !ok {
				return e, modelErrorf("op append_log_entry: value must be an object of extra entry fields")
			}
			if _, ok := fields["message"]; ok {
				return e, modelErrorf("op append_log_entry: put the message in text, not in value")
			}
			for k, x := range fields {
				entry[k] = x
			}
		}
		entry["message"] = *a.Text
		e.Value = entry
		return e, nil
	}
	return e, modelErrorf("unknown op %s; use one of set_text, append_text, replace_text, insert_text, set_field, append_to_list_field, increment_counter, push_item, insert_item, delete_item, check_item, append_log_entry", quote(a.Op))
}

func proposeEdit(ctx context.Context, ts *Toolset, a *proposeEditArgs) (Result, error) {
	ref, err := ts.ref(a.Owner, a.Label, a.Section)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(a.Reason) == "" {
		return Result{}, modelErrorf("reason is empty; say why the change should be made")
	}
	e, err := buildEdit(a)
	if err != nil {
		return Result{}, err
	}
	e.Section = ref.section
	if err := ts.editSize(e); err != nil {
		return Result{}, err
	}
	doc, err := ts.block(ctx, ref)
	if err != nil {
		return Result{}, ts.blockErr(ctx, ref, nil, err)
	}
	switch p := doc.Permission(); p {
	case blocks.Partner, blocks.Human:
	case blocks.ReadOnly:
		return Result{}, modelErrorf("%s is read-only for you: edits to it cannot be proposed", ref)
	case blocks.Append:
		return Result{}, modelErrorf("your permission on %s is Append: only appending edits are allowed and they need no approval; use block_append, block_push_item or log_append", ref)
	default:
		return Result{}, modelErrorf("your permission on %s is %s: you can edit it directly with the block_* and log_append tools, no proposal needed", ref, p)
	}
	if err := ts.fieldEditSize(doc, ref, e); err != nil {
		return Result{}, err
	}
	if e.Op == blocks.OpReplaceText {
		cur, err := doc.Section(ref.section).Text()
		if err != nil {
			return Result{}, ts.blockErr(ctx, ref, doc, err)
		}
		if err := checkUnique(cur, e.Old, ref); err != nil {
			return Result{}, err
		}
	}
	// The store tries the edit on a copy of the block, with the write
	// access an approval grants, so a proposal that could never apply is
	// refused now (once: the copy costs the whole block).
	p, err := ts.propose(ctx, ts.handle(ref), e, a.Reason)
	// The tool says "even if approved" in its own words.
	if inapplicable := (*memory.InapplicableEditError)(nil); errors.As(err, &inapplicable) {
		err = inapplicable.Err
	}
	switch {
	case errors.Is(err, memory.ErrNoMatch):
		return Result{}, noMatchErr(e.Old, ref)
	case err == nil:
	case isInfra(err):
		return Result{}, err
	case errors.Is(err, memory.ErrInvalidArgument):
		return Result{}, modelErrorf("unsupported op %s", quote(string(e.Op)))
	case errors.Is(err, blocks.ErrPermission):
		return Result{}, modelErrorf("%s; even if approved this edit could not be applied", cleanErr(err))
	default:
		return Result{}, ts.blockErr(ctx, ref, doc, err)
	}
	return okResult("Proposal #%d created: %s on %s. It is not applied until it is approved.", p.ID, e.Op, ref), nil
}
