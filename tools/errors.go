package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
	"github.com/engram-go/engram/toolrules"
)

// modelError is a mistake the model can fix; msg is shown to it as is.
type modelError struct{ msg string }

func (e *modelError) Error() string { return e.msg }

func modelErrorf(format string, args ...any) error {
	return &modelError{msg: fmt.Sprintf(format, args...)}
}

// infraErrors are problems outside the model's control.
var infraErrors = []error{
	context.Canceled, context.DeadlineExceeded,
	memory.ErrClosed, memory.ErrPersist,
	search.ErrEmbedder, search.ErrEmbedderMismatch,
	blocks.ErrCorrupt, blocks.ErrHistorical,
}

// modelErrors are refusals caused by what the model asked for.
var modelErrors = []error{
	memory.ErrNotFound, memory.ErrExists, memory.ErrInvalidArgument, memory.ErrNoMatch,
	memory.ErrTooLarge, memory.ErrQuota,
	blocks.ErrPermission, blocks.ErrWrongSchema, blocks.ErrLimit, blocks.ErrOutOfRange,
	schema.ErrInvalid,
	search.ErrInvalidQuery, search.ErrNoEmbedder,
	toolrules.ErrViolation,
}

// isInfra reports whether err is an infrastructure problem (returned as a
// Go error) rather than a refusal the model can act on. Unknown errors are
// infrastructure: they are not the model's to fix.
func isInfra(err error) bool {
	for _, e := range infraErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	for _, e := range modelErrors {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

var errPrefixes = []string{"memory: ", "blocks: ", "schema: ", "search: ", "toolrules: "}

// cleanErr is err's message without package prefixes.
func cleanErr(err error) string {
	msg := err.Error()
	for _, p := range errPrefixes {
		msg = strings.ReplaceAll(msg, ": "+p, ": ")
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// blockRef names a block (and section) for messages.
type blockRef struct {
	owner, label, section string
	agent                 string
}

func (r blockRef) String() string {
	s := fmt.Sprintf("block %q", r.label)
	if r.owner != "" && r.owner != r.agent {
		s += fmt.Sprintf(" (owner %q)", r.owner)
	}
	if r.section != "" {
		s += fmt.Sprintf(" section %q", r.section)
	}
	return s
}

// notFound explains that a block is not visible and lists what is. For
// another owner's block it never says whether the block exists.
func (ts *Toolset) notFound(ctx context.Context, ref blockRef) error {
	var msg string
	if ref.owner == "" || ref.owner == ts.agent {
		msg = fmt.Sprintf("block %q not found", ref.label)
	} else {
		msg = fmt.Sprintf("no block %q of %q is shared with you", ref.label, ref.owner)
	}
	if avail, err := ts.available(ctx); err != nil {
		return err
	} else if avail != "" {
		msg += "; " + avail
	}
	return &modelError{msg: msg}
}

// available lists the agent's blocks and the blocks shared with it.
func (ts *Toolset) available(ctx context.Context) (string, error) {
	own, err := ts.mem.Blocks(ctx)
	if err != nil {
		return "", err
	}
	shared, err := ts.mem.SharedBlocks(ctx)
	if err != nil {
		return "", err
	}
	var parts []string
	if len(own) > 0 {
		labels := make([]string, len(own))
		for i, b := range own {
			labels[i] = b.Label
		}
		parts = append(parts, "your blocks: "+strings.Join(labels, ", "))
	} else {
		parts = append(parts, "you have no blocks")
	}
	if len(shared) > 0 {
		labels := make([]string, len(shared))
		for i, b := range shared {
			labels[i] = fmt.Sprintf("%s (owner %q)", b.Label, b.Owner)
		}
		parts = append(parts, "shared with you: "+strings.Join(labels, ", "))
	}
	return strings.Join(parts, "; "), nil
}

// quotaHint follows an ErrQuota: the model cannot free space itself.
const quotaHint = "archival memory cannot grow past this quota: store less, or keep what matters in your blocks"

// blockErr turns a store error about a block edit into a model-readable
// error with a hint, or returns infrastructure errors unchanged. doc may be
// nil when the block could not be read.
func (ts *Toolset) blockErr(ctx context.Context, ref blockRef, doc *blocks.Document, err error) error {
	if isInfra(err) {
		return err
	}
	var me *modelError
	if errors.As(err, &me) {
		return err
	}
	if errors.Is(err, memory.ErrNotFound) {
		return ts.notFound(ctx, ref)
	}
	msg := cleanErr(err)
	var hint string
	switch {
	case errors.Is(err, blocks.ErrNeedsApproval):
		hint = "use propose_edit to ask for approval"
	case errors.Is(err, blocks.ErrPermission):
		hint = permissionHint(doc)
	case errors.Is(err, memory.ErrQuota):
		hint = quotaHint
	case errors.Is(err, blocks.ErrLimit):
		hint = "shorten the text, or make room first by replacing long passages with shorter ones"
	case errors.Is(err, blocks.ErrWrongSchema):
		hint = shapeHint(doc, ref.section)
	case errors.Is(err, schema.ErrInvalid):
		if doc != nil {
			hint = shapeHint(doc, ref.section)
		}
	}
	if hint != "" {
		msg += ". " + hint
	}
	return &modelError{msg: msg}
}

func permissionHint(doc *blocks.Document) string {
	if doc == nil {
		return ""
	}
	switch doc.Permission() {
	case blocks.ReadOnly:
		return fmt.Sprintf("block %q is read-only for you; do not try to edit it", doc.Label())
	case blocks.Append:
		return fmt.Sprintf("your permission on block %q is Append: you may only add to it (block_append, block_push_item, log_append)", doc.Label())
	case blocks.Partner, blocks.Human:
		return "use propose_edit to ask for approval"
	}
	return ""
}

// shapeHint says what a block (or section) holds and which tools fit it.
func shapeHint(doc *blocks.Document, section string) string {
	if doc == nil {
		return ""
	}
	s := doc.Schema()
	where := fmt.Sprintf("block %q", doc.Label())
	if comp, ok := schema.Deref(s).(schema.Composite); ok {
		if section == "" {
			return fmt.Sprintf("%s has sections; pass section (one of: %s)", where, describeSections(comp))
		}
		sec, ok := comp.Section(section)
		if !ok {
			return fmt.Sprintf("%s has no section %q; sections: %s", where, section, describeSections(comp))
		}
		s = sec.Schema
		where += fmt.Sprintf(" section %q", section)
	} else if section != "" {
		return fmt.Sprintf("%s has no sections; omit section", where)
	}
	return where + " " + describeShape(s)
}

func describeSections(c schema.Composite) string {
	parts := make([]string, len(c.Sections))
	for i, sec := range c.Sections {
		ro := ""
		if sec.ReadOnly {
			ro = ", read-only"
		}
		parts[i] = fmt.Sprintf("%s (%s%s)", sec.Name, sec.Schema.Kind(), ro)
	}
	return strings.Join(parts, ", ")
}

func describeShape(s schema.Schema) string {
	switch v := schema.Deref(s).(type) {
	case schema.Text:
		return "is text: use block_append, block_replace or block_insert_line"
	case schema.Map:
		fields := make([]string, len(v.Fields))
		var lists []string
		for i, f := range v.Fields {
			fields[i] = fmt.Sprintf("%s (%s)", f.Name, f.Type)
			if f.ReadOnly {
				fields[i] = fmt.Sprintf("%s (%s, read-only)", f.Name, f.Type)
			}
			if f.Type == schema.FieldList {
				lists = append(lists, f.Name)
			}
		}
		msg := "has fields " + strings.Join(fields, ", ") + ": use block_set_field"
		if len(lists) > 0 {
			msg += ", or block_push_item with field to add to a list field"
		}
		return msg
	case schema.List:
		msg := fmt.Sprintf("is a list of %s items: use block_push_item", v.ItemType())
		if v.MaxItems > 0 {
			msg += fmt.Sprintf(" (at most %d items)", v.MaxItems)
		}
		return msg
	case schema.Log:
		if len(v.Entry) > 0 {
			names := make([]string, len(v.Entry))
			for i, f := range v.Entry {
				names[i] = fmt.Sprintf("%s (%s)", f.Name, f.Type)
			}
			return "is a log: use log_append (entry fields: " + strings.Join(names, ", ") + ")"
		}
		return "is a log: use log_append"
	}
	return fmt.Sprintf("has schema %s", s.Kind())
}
