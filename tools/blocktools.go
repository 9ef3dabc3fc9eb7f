package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

type blockAppendArgs struct {
	Label   string `json:"label" jsonschema_description:"Label of the block, as in its <block:LABEL> tag."`
	Text    string `json:"text" jsonschema_description:"Text to add at the end. It starts on a new line unless the block is empty or already ends with a newline."`
	Owner   string `json:"owner,omitempty" jsonschema_description:"Only for a block shared with you: the agent that owns it, as in shared_from=\"OWNER\". Omit for your own blocks."`
	Section string `json:"section,omitempty" jsonschema_description:"Only for a block with sections (shown with === name === headers): the section to edit. Omit otherwise."`
}

type blockReplaceArgs struct {
	Label   string `json:"label" jsonschema_description:"Label of the block, as in its <block:LABEL> tag."`
	Old     string `json:"old" jsonschema_description:"Exact text to replace, copied from the block's current content (whitespace and case matter). It must occur exactly once: include surrounding words if it is ambiguous."`
	New     string `json:"new" jsonschema_description:"Replacement text. Use an empty string to delete the old text."`
	Owner   string `json:"owner,omitempty" jsonschema_description:"Only for a block shared with you: the agent that owns it, as in shared_from=\"OWNER\". Omit for your own blocks."`
	Section string `json:"section,omitempty" jsonschema_description:"Only for a block with sections (shown with === name === headers): the section to edit. Omit otherwise."`
}

type blockSetFieldArgs struct {
	Label   string          `json:"label" jsonschema_description:"Label of the block, as in its <block:LABEL> tag."`
	Field   string          `json:"field" jsonschema_description:"Name of the field, as in the block's \"field: value\" lines."`
	Value   json.RawMessage `json:"value" jsonschema_description:"New value of the field, of the field's type: a string, number, boolean, array or object. null clears an optional field."`
	Owner   string          `json:"owner,omitempty" jsonschema_description:"Only for a block shared with you: the agent that owns it, as in shared_from=\"OWNER\". Omit for your own blocks."`
	Section string          `json:"section,omitempty" jsonschema_description:"Only for a block with sections (shown with === name === headers): the section to edit. Omit otherwise."`
}

type blockPushItemArgs struct {
	Label   string          `json:"label" jsonschema_description:"Label of the block, as in its <block:LABEL> tag."`
	Item    json.RawMessage `json:"item" jsonschema_description:"The item to add at the end, usually a string (a number or boolean for lists of those)."`
	Field   string          `json:"field,omitempty" jsonschema_description:"Only for a block of fields: the list field to add the item to. Omit for a list block."`
	Owner   string          `json:"owner,omitempty" jsonschema_description:"Only for a block shared with you: the agent that owns it, as in shared_from=\"OWNER\". Omit for your own blocks."`
	Section string          `json:"section,omitempty" jsonschema_description:"Only for a block with sections (shown with === name === headers): the section to edit. Omit otherwise."`
}

type blockInsertLineArgs struct {
	Label   string `json:"label" jsonschema_description:"Label of the block, as in its <block:LABEL> tag."`
	Line    int    `json:"line" jsonschema:"minimum=1" jsonschema_description:"1-based line number the new line gets: 1 inserts before the first line, the number of lines + 1 adds it at the end."`
	Text    string `json:"text" jsonschema_description:"Text of the new line, without a trailing newline (it may contain newlines to insert several lines)."`
	Owner   string `json:"owner,omitempty" jsonschema_description:"Only for a block shared with you: the agent that owns it, as in shared_from=\"OWNER\". Omit for your own blocks."`
	Section string `json:"section,omitempty" jsonschema_description:"Only for a block with sections (shown with === name === headers): the section to edit. Omit otherwise."`
}

type logAppendArgs struct {
	Label   string         `json:"label" jsonschema_description:"Label of the log block, as in its <block:LABEL> tag."`
	Message string         `json:"message" jsonschema_description:"The entry's message. The time is recorded automatically."`
	Fields  map[string]any `json:"fields,omitempty" jsonschema_description:"Extra entry fields the log declares, as an object such as {\"level\": \"info\"}. Omit when there are none."`
	Owner   string         `json:"owner,omitempty" jsonschema_description:"Only for a block shared with you: the agent that owns it, as in shared_from=\"OWNER\". Omit for your own blocks."`
	Section string         `json:"section,omitempty" jsonschema_description:"Only for a block with sections (shown with === name === headers): the log section. Omit otherwise."`
}

func (ts *Toolset) ref(owner, label, section string) (blockRef, error) {
	if strings.TrimSpace(label) == "" {
		return blockRef{}, modelErrorf("label is empty; give the block's label, as in its <block:LABEL> tag")
	}
	if owner == ts.agent {
		owner = ""
	}
	// The model passes the name from the block's tag; for a label stored
	// before labels were checked that name is escaped (blocks.TagLabel).
	label = blocks.LabelFromTag(label)
	return blockRef{owner: owner, label: label, section: section, agent: ts.agent}, nil
}

// handle is the agent's handle on a block: its own, or one shared with it.
func (ts *Toolset) handle(ref blockRef) *memory.Block {
	if ref.owner == "" {
		return ts.mem.Block(ref.label)
	}
	return ts.mem.Shared(ref.owner, ref.label)
}

// block returns the agent's view of a block: its own, or one shared with it.
func (ts *Toolset) block(ctx context.Context, ref blockRef) (*blocks.Document, error) {
	return ts.handle(ref).Doc(ctx)
}

// edit applies e to the block as the agent. prepare, when set, may inspect
// the current document and adjust e first; done describes the applied
// edit given the document afterwards.
func (ts *Toolset) edit(ctx context.Context, ref blockRef, e memory.Edit,
	prepare func(doc *blocks.Document, e *memory.Edit) error,
	done func(doc *blocks.Document) string) (Result, error) {
	e.Section = ref.section
	if err := ts.editSize(e); err != nil {
		return Result{}, err
	}
	doc, err := ts.block(ctx, ref)
	if err != nil {
		return Result{}, ts.blockErr(ctx, ref, nil, err)
	}
	if err := ts.fieldEditSize(doc, ref, e); err != nil {
		return Result{}, err
	}
	if prepare != nil {
		if err := prepare(doc, &e); err != nil {
			return Result{}, ts.blockErr(ctx, ref, doc, err)
		}
	}
	err = ts.apply(ctx, ts.handle(ref), e)
	var pe *memory.ProposalError
	if errors.Is(err, memory.ErrNoMatch) {
		// prepare saw the text, but the block changed before the edit ran
		// (another agent or process): nothing was replaced.
		return Result{}, noMatchErr(e.Old, ref)
	}
	if errors.As(err, &pe) {
		return okResult("Not applied yet: your permission on %s is %s, so this edit needs approval. It was kept as proposal #%d and awaits approval.",
			ref, doc.Permission(), pe.ProposalID), nil
	}
	if err != nil {
		return Result{}, ts.blockErr(ctx, ref, doc, err)
	}
	if d, err := ts.block(ctx, ref); err == nil {
		doc = d
	}
	return okResult("%s. Block %q now has %d of %d characters.", done(doc), ref.label, doc.Size(), doc.CharLimit()), nil
}

// editChars is the characters an edit carries: its text, the text it
// replaces and its value as JSON. A log entry's message, carried in both
// its text and its value, counts once.
func editChars(e memory.Edit) int {
	n := utf8.RuneCountInString(e.Text) + utf8.RuneCountInString(e.Old)
	if e.Value != nil {
		v, _ := json.Marshal(e.Value) // decoded from JSON: it encodes
		n += utf8.RuneCount(v)
		if e.Op == blocks.OpAppendLogEntry {
			n -= utf8.RuneCountInString(e.Text)
		}
	}
	return n
}

// editSize refuses an edit of more characters than Options.MaxEditChars.
func (ts *Toolset) editSize(e memory.Edit) error {
	if ts.maxEdit <= 0 {
		return nil
	}
	if n := editChars(e); n > ts.maxEdit {
		return modelErrorf("this edit carries %d characters (its text, the text it replaces and its value together), more than the %d one edit may carry here; make it as several smaller edits", n, ts.maxEdit)
	}
	return nil
}

// fieldEditSize refuses a set_field or set_text whose value, with what
// it deletes of the current one, is more characters (or list items)
// than Options.MaxEditChars: a text or list is changed in place, one
// automerge operation per character or item it deletes, so a short value
// can clear a long one.
func (ts *Toolset) fieldEditSize(doc *blocks.Document, ref blockRef, e memory.Edit) error {
	if ts.maxEdit <= 0 {
		return nil
	}
	var deleted int
	what := fmt.Sprintf("setting field %q", e.Field)
	switch e.Op {
	case blocks.OpSetField:
		deleted = doc.Section(ref.section).SetFieldDeletes(e.Field, e.Value)
	case blocks.OpSetText:
		deleted, what = doc.Section(ref.section).SetTextDeletes(e.Text), "setting the text"
	}
	if deleted == 0 {
		return nil
	}
	if n := editChars(e) + deleted; n > ts.maxEdit {
		return modelErrorf("%s deletes %d characters or items of its value; with the new value that is %d, more than the %d one edit may carry here", what, deleted, n, ts.maxEdit)
	}
	return nil
}

func blockAppend(ctx context.Context, ts *Toolset, a *blockAppendArgs) (Result, error) {
	ref, err := ts.ref(a.Owner, a.Label, a.Section)
	if err != nil {
		return Result{}, err
	}
	if a.Text == "" {
		return Result{}, modelErrorf("text is empty; give the text to append")
	}
	added := utf8.RuneCountInString(a.Text)
	return ts.edit(ctx, ref, memory.Edit{Op: blocks.OpAppendText, Text: a.Text},
		func(doc *blocks.Document, e *memory.Edit) error {
			cur, err := doc.Section(ref.section).Text()
			if err != nil {
				return err
			}
			if cur != "" && !strings.HasSuffix(cur, "\n") && !strings.HasPrefix(e.Text, "\n") {
				e.Text = "\n" + e.Text
			}
			return nil
		},
		func(*blocks.Document) string {
			return fmt.Sprintf("Appended %d characters to %s", added, ref)
		})
}

// matchLines returns the 1-based line numbers at which old occurs in text,
// counting overlapping occurrences.
func matchLines(text, old string) []int {
	var lines []int
	for i := 0; i <= len(text)-len(old); {
		j := strings.Index(text[i:], old)
		if j < 0 {
			break
		}
		at := i + j
		lines = append(lines, 1+strings.Count(text[:at], "\n"))
		_, size := utf8.DecodeRuneInString(text[at:])
		i = at + max(size, 1)
	}
	return lines
}

// checkUnique fails unless old occurs exactly once in text.
func checkUnique(text, old string, ref blockRef) error {
	lines := matchLines(text, old)
	switch len(lines) {
	case 1:
		return nil
	case 0:
		return noMatchErr(old, ref)
	}
	var nums []string
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			nums = append(nums, strconv.Itoa(l))
		}
	}
	where := "on line " + nums[0]
	if len(nums) > 1 {
		where = "on lines " + strings.Join(nums, ", ")
	}
	return modelErrorf("%d matches for %s in %s (%s); include more context (surrounding words) in old so it matches exactly once",
		len(lines), quote(old), ref, where)
}

// noMatchErr is the model error for replacement text that does not occur.
func noMatchErr(old string, ref blockRef) error {
	return modelErrorf("no match for %s in %s; old must be copied exactly from the block's current content (whitespace, punctuation and case matter)", quote(old), ref)
}

// quote is %q of s, shortened to 60 characters.
func quote(s string) string {
	const max = 60
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		return strconv.Quote(string(r[:max])) + "…"
	}
	return strconv.Quote(s)
}

func blockReplace(ctx context.Context, ts *Toolset, a *blockReplaceArgs) (Result, error) {
	ref, err := ts.ref(a.Owner, a.Label, a.Section)
	if err != nil {
		return Result{}, err
	}
	if a.Old == "" {
		return Result{}, modelErrorf("old is empty; give the exact text to replace (use block_append or block_insert_line to add text)")
	}
	return ts.edit(ctx, ref, memory.Edit{Op: blocks.OpReplaceText, Old: a.Old, Text: a.New},
		func(doc *blocks.Document, _ *memory.Edit) error {
			cur, err := doc.Section(ref.section).Text()
			if err != nil {
				return err
			}
			if doc.Permission() == blocks.ReadOnly {
				return nil // the store reports the permission
			}
			return checkUnique(cur, a.Old, ref)
		},
		func(*blocks.Document) string {
			return fmt.Sprintf("Replaced %s with %s in %s", quote(a.Old), quote(a.New), ref)
		})
}

// decodeValue decodes a JSON value argument (null is nil).
func decodeValue(raw json.RawMessage) (any, error) {
	var v any
	if len(raw) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, modelErrorf("value is not valid JSON: %v", err)
	}
	return v, nil
}

func blockSetField(ctx context.Context, ts *Toolset, a *blockSetFieldArgs) (Result, error) {
	ref, err := ts.ref(a.Owner, a.Label, a.Section)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(a.Field) == "" {
		return Result{}, modelErrorf("field is empty; give the name of the field to set")
	}
	v, err := decodeValue(a.Value)
	if err != nil {
		return Result{}, err
	}
	return ts.edit(ctx, ref, memory.Edit{Op: blocks.OpSetField, Field: a.Field, Value: v}, nil,
		func(*blocks.Document) string {
			if v == nil {
				return fmt.Sprintf("Cleared field %q of %s", a.Field, ref)
			}
			return fmt.Sprintf("Set field %q of %s", a.Field, ref)
		})
}

func blockPushItem(ctx context.Context, ts *Toolset, a *blockPushItemArgs) (Result, error) {
	ref, err := ts.ref(a.Owner, a.Label, a.Section)
	if err != nil {
		return Result{}, err
	}
	v, err := decodeValue(a.Item)
	if err != nil {
		return Result{}, err
	}
	if v == nil {
		return Result{}, modelErrorf("item is null; give the item to add")
	}
	if a.Field != "" {
		return ts.edit(ctx, ref, memory.Edit{Op: blocks.OpAppendToListField, Field: a.Field, Value: v}, nil,
			func(*blocks.Document) string {
				return fmt.Sprintf("Added an item to list field %q of %s", a.Field, ref)
			})
	}
	return ts.edit(ctx, ref, memory.Edit{Op: blocks.OpPushItem, Value: v}, nil,
		func(doc *blocks.Document) string {
			if list, err := doc.Section(ref.section).Items(); err == nil {
				return fmt.Sprintf("Added item %d to %s", len(list), ref)
			}
			return fmt.Sprintf("Added an item to %s", ref)
		})
}

func blockInsertLine(ctx context.Context, ts *Toolset, a *blockInsertLineArgs) (Result, error) {
	ref, err := ts.ref(a.Owner, a.Label, a.Section)
	if err != nil {
		return Result{}, err
	}
	return ts.edit(ctx, ref, memory.Edit{Op: blocks.OpInsertText, Index: a.Line, Text: a.Text}, nil,
		func(*blocks.Document) string {
			return fmt.Sprintf("Inserted line %d into %s", a.Line, ref)
		})
}

func logAppend(ctx context.Context, ts *Toolset, a *logAppendArgs) (Result, error) {
	ref, err := ts.ref(a.Owner, a.Label, a.Section)
	if err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(a.Message) == "" {
		return Result{}, modelErrorf("message is empty; give the entry's message")
	}
	if _, ok := a.Fields["message"]; ok {
		return Result{}, modelErrorf("fields must not contain \"message\"; pass the message in the message argument")
	}
	entry := map[string]any{"message": a.Message}
	for k, v := range a.Fields {
		entry[k] = v
	}
	return ts.edit(ctx, ref, memory.Edit{Op: blocks.OpAppendLogEntry, Text: a.Message, Value: entry}, nil,
		func(*blocks.Document) string {
			return fmt.Sprintf("Logged an entry to %s", ref)
		})
}

type loadSkillArgs struct {
	Name string `json:"name" jsonschema_description:"The skill's name, as listed under Available skills."`
}

func loadSkill(ctx context.Context, ts *Toolset, a *loadSkillArgs) (Result, error) {
	name := strings.TrimSpace(a.Name)
	if name == "" {
		return Result{}, modelErrorf("name is empty; give a skill's name from the Available skills list")
	}
	label := blocks.SkillLabelPrefix + strings.TrimPrefix(name, blocks.SkillLabelPrefix)
	body, err := ts.mem.Block(label).Render(ctx)
	if errors.Is(err, memory.ErrNotFound) {
		return Result{}, modelErrorf("there is no skill %q; %s", name, ts.skillNames(ctx))
	}
	if err != nil {
		return Result{}, err
	}
	return okResult("Skill %s:\n\n%s", name, body), nil
}

// skillNames says which skills the agent has, for an error message.
func (ts *Toolset) skillNames(ctx context.Context) string {
	metas, err := ts.mem.Blocks(ctx)
	if err != nil {
		return "the skills could not be listed"
	}
	var names []string
	for _, m := range metas {
		if n, ok := strings.CutPrefix(m.Label, blocks.SkillLabelPrefix); ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "you have no skills"
	}
	return "your skills are: " + strings.Join(names, ", ")
}
