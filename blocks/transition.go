package blocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/schema"
)

// Origin says who brings a change into a block: an agent holding a
// permission on it, or the trusted system. Every path that changes a
// block's value — a local edit, a merge of changes made elsewhere
// (blockseam.Replica.Merge), a dump's import — judges the change as a transition
// from the value before to the value after, made by its origin (see
// CheckTransition), so no path can skip the schema, the read-only parts,
// the permission or the limits.
type Origin struct {
	// Agent is who the change is attributed to (for messages).
	Agent string
	// Permission is the agent's effective permission on the block.
	Permission Permission
	// System marks the trusted caller: no permission or read-only check,
	// but the schema and the limits still apply.
	System bool
}

// CheckTransition judges a change of block info's value from before to
// after (values in the form Value returns) made by o. It is the one check
// every write path runs:
//
//   - after must be valid under the block's schema (schema.ErrInvalid);
//   - an agent must leave read-only fields and sections as they were
//     (ErrPermission);
//   - a ReadOnly agent changes nothing, and Partner and Human changes need
//     an approval this check cannot give: both are refused
//     (ErrPermission); a caller that obtained the approval judges the
//     change at the permission it was approved for;
//   - an Append agent, and any agent on a Log block, may only append: a
//     text keeps its old content as a prefix, list items and log entries
//     are only added at the end, counters only go up, every other field
//     stays as it was (ErrPermission). An Admin may also drop the oldest
//     entries of a Log-schema value (what TrimLog does);
//   - after must not be over the character limit, unless it is smaller
//     than before (ErrLimit).
//
// The error names the block, the agent and the field or section.
func CheckTransition(info Info, o Origin, before, after any) error {
	return judge(transition{info: info, origin: o, before: before, after: after,
		sizeBefore: renderedSize(info.Schema, before), sizeAfter: renderedSize(info.Schema, after)})
}

// CheckValue reports whether v, a value in the form Value returns, is
// valid under s in every part (an error wrapping schema.ErrInvalid if
// not): what the content of a block must be for a schema change to take s
// (a store's UpdateBlockSchema). Document.SetInfo itself only needs the
// value readable, as it also brings a replica up to a schema another
// process chose for a later state.
func CheckValue(s schema.Schema, v any) error {
	return validateModel(s, nil, v, "")
}

func renderedSize(s schema.Schema, v any) int {
	if v == nil {
		return 0
	}
	return runeLen(render(s, v, renderFull))
}

// transition is one change of a block's value, as judge sees it.
type transition struct {
	info          Info
	origin        Origin
	op            Op // "" when unknown (a merge names OpMerge)
	before, after any
	// sizeBefore and sizeAfter are the rune counts of the full renderings.
	sizeBefore, sizeAfter int
}

// judge is CheckTransition with the sizes already known: the local edit
// path has them (an append counts only what it adds), so judging costs it
// no rendering.
func judge(t transition) error {
	info, o := t.info, t.origin
	who := o.Agent
	if o.System {
		who = "system"
	}
	if err := validateModel(info.Schema, t.before, t.after, ""); err != nil {
		return fmt.Errorf("block %q: change by %q: %w", info.Label, who, err)
	}
	if !o.System {
		deny := func(why string) error {
			return fmt.Errorf("%w: agent %q may not make this change to block %q: %s", ErrPermission, o.Agent, info.Label, why)
		}
		switch o.Permission {
		case ReadOnly:
			return deny("permission is ReadOnly")
		case Partner, Human:
			if t.op == OpMerge {
				return deny(fmt.Sprintf("permission %s needs an approval, and merged changes cannot be proposed", o.Permission))
			}
		case Append, ReadWrite, Admin:
		default:
			return deny("no valid permission")
		}
		if what := changedReadOnly(info.Schema, t.before, t.after); what != "" {
			return deny(what + " is read-only")
		}
		trim := o.Permission == Admin && (t.op == "" || t.op == OpMerge || t.op == OpTrimLog)
		if o.Permission == Append || info.Type == Log {
			if what := notAppendOnly(info.Schema, t.before, t.after, trim, ""); what != "" {
				return deny(fmt.Sprintf("%s (only appending is allowed: %s)", what, appendReason(o.Permission, info.Type)))
			}
		} else if what := changedLogEntries(info.Schema, t.before, t.after, trim, ""); what != "" {
			return deny(what + " (log entries are immutable)")
		}
	}
	if lim := info.limit(); t.sizeAfter > lim && t.sizeAfter > t.sizeBefore {
		op := t.op
		if op == "" {
			op = "the change"
		}
		return fmt.Errorf("%w: block %q: %s by %q would make it %d characters, limit is %d", ErrLimit, info.Label, op, who, t.sizeAfter, lim)
	}
	return nil
}

func appendReason(p Permission, t Type) string {
	if p == Append {
		return "permission Append"
	}
	return fmt.Sprintf("a %s block is append-only", t)
}

func joinField(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func invalidAt(path, format string, args ...any) error {
	return &schema.FieldError{Field: path, Reason: fmt.Sprintf(format, args...), Err: schema.ErrInvalid}
}

// validateModel checks a model value (the form Value returns) against s.
// before is the value it replaces (nil if none). Only what the change
// touches is judged — the text it appends, the fields, items and entries
// that differ from before — as the rest was judged when it was written:
// so an append costs what it appends, and a block that holds a value an
// older version let in can still be edited elsewhere. A required field may
// be missing only if it was missing before (a required field without a
// default is empty until first set).
func validateModel(s schema.Schema, before, after any, path string) error {
	switch sc := schema.Deref(s).(type) {
	case schema.Text:
		a, ok := after.(string)
		if !ok {
			return invalidAt(path, "text wants a string, got %T", after)
		}
		if b, ok := before.(string); ok && len(a) >= len(b) && a[:len(b)] == b {
			a = a[len(b):]
		}
		if !utf8.ValidString(a) {
			return invalidAt(path, "text is not valid UTF-8")
		}
		if i := strings.IndexByte(a, 0); i >= 0 {
			return invalidAt(path, "text holds a NUL byte") // as checkUTF8 refuses it from a local edit
		}
		return nil
	case schema.Map:
		a, ok := after.(map[string]any)
		if !ok {
			return invalidAt(path, "map wants an object, got %T", after)
		}
		b, _ := before.(map[string]any)
		for k := range a {
			if _, ok := sc.Field(k); !ok {
				return invalidAt(joinField(path, k), "unknown field (known: %s)", fieldList(sc.Fields))
			}
		}
		for _, f := range sc.Fields {
			v, present := a[f.Name]
			if reflect.DeepEqual(v, b[f.Name]) {
				continue
			}
			if !present || v == nil {
				if _, had := b[f.Name]; had && f.Required {
					return invalidAt(joinField(path, f.Name), "required field cannot be cleared")
				}
				continue
			}
			if _, err := schema.Coerce(f.Type, v); err != nil {
				return invalidAt(joinField(path, f.Name), "%v", err)
			}
		}
		return nil
	case schema.List:
		a, ok := after.([]Item)
		if !ok {
			return invalidAt(path, "list wants items, got %T", after)
		}
		if sc.MaxItems > 0 && len(a) > sc.MaxItems {
			return invalidAt(joinField(path, "items"), "%d items exceed max_items %d", len(a), sc.MaxItems)
		}
		b, _ := before.([]Item)
		for i, it := range a {
			if i < len(b) && reflect.DeepEqual(b[i], it) {
				continue
			}
			if _, err := sc.CoerceItem(it.Value); err != nil {
				return invalidAt(fmt.Sprintf("%s[%d]", path, i), "%s", strings.TrimPrefix(err.Error(), "item: "))
			}
			if it.Checked && !sc.Checkbox {
				return invalidAt(fmt.Sprintf("%s[%d]", path, i), "checked, but the list has no checkboxes")
			}
		}
		return nil
	case schema.Log:
		a, ok := after.([]LogEntry)
		if !ok {
			return invalidAt(path, "log wants entries, got %T", after)
		}
		b, _ := before.([]LogEntry)
		for i, e := range a {
			if i < len(b) && reflect.DeepEqual(b[i], e) {
				continue
			}
			at := fmt.Sprintf("%s[%d]", path, i)
			if e.Timestamp.IsZero() {
				return invalidAt(joinField(at, schema.LogTimestamp), "missing")
			}
			if !utf8.ValidString(e.Message) {
				return invalidAt(joinField(at, schema.LogMessage), "not valid UTF-8")
			}
			for k, v := range e.Fields {
				f, ok := sc.Field(k)
				if !ok {
					return invalidAt(joinField(at, k), "unknown log entry field")
				}
				if _, err := schema.Coerce(f.Type, v); err != nil {
					return invalidAt(joinField(at, k), "%v", err)
				}
			}
			for _, f := range sc.Entry {
				if _, ok := e.Fields[f.Name]; !ok && f.Required {
					return invalidAt(joinField(at, f.Name), "required field is missing")
				}
			}
		}
		return nil
	case schema.Composite:
		a, ok := after.(map[string]any)
		if !ok {
			return invalidAt(path, "composite wants an object of sections, got %T", after)
		}
		b, _ := before.(map[string]any)
		for k := range a {
			if _, ok := sc.Section(k); !ok {
				return invalidAt(joinField(path, k), "unknown section")
			}
		}
		for _, sec := range sc.Sections {
			if err := validateModel(sec.Schema, b[sec.Name], a[sec.Name], joinField(path, sec.Name)); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown schema %T", ErrWrongSchema, s)
}

func fieldList(fs []schema.FieldDef) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// notAppendOnly names the first part of after that is not before with
// something appended, or "". With trim, a Log-schema value may also have
// lost its oldest entries.
func notAppendOnly(s schema.Schema, before, after any, trim bool, path string) string {
	where := func(what string) string {
		if path == "" {
			return what
		}
		return fmt.Sprintf("section %q %s", path, what)
	}
	switch sc := schema.Deref(s).(type) {
	case schema.Text:
		b, _ := before.(string)
		a, _ := after.(string)
		if !strings.HasPrefix(a, b) {
			return where("the text was changed, not appended to")
		}
	case schema.Map:
		bm, _ := before.(map[string]any)
		am, _ := after.(map[string]any)
		for _, f := range sc.Fields {
			b, a := bm[f.Name], am[f.Name]
			ok := true
			switch f.Type {
			case schema.FieldText:
				bs, _ := b.(string)
				as, _ := a.(string)
				ok = strings.HasPrefix(as, bs)
			case schema.FieldList:
				bl, _ := b.([]any)
				al, _ := a.([]any)
				ok = len(al) >= len(bl) && reflect.DeepEqual(bl, al[:len(bl)])
			case schema.FieldCounter:
				bi, _ := b.(int64)
				ai, _ := a.(int64)
				ok = ai >= bi
			default:
				ok = reflect.DeepEqual(b, a)
			}
			if !ok {
				return where(fmt.Sprintf("field %q was changed, not appended to", f.Name))
			}
		}
	case schema.List:
		b, _ := before.([]Item)
		a, _ := after.([]Item)
		if len(a) < len(b) || !reflect.DeepEqual(b, a[:len(b)]) {
			return where("items were changed or removed, not only added at the end")
		}
	case schema.Log:
		if what := changedLogEntries(s, before, after, trim, ""); what != "" {
			return where(what)
		}
	case schema.Composite:
		bm, _ := before.(map[string]any)
		am, _ := after.(map[string]any)
		for _, sec := range sc.Sections {
			if w := notAppendOnly(sec.Schema, bm[sec.Name], am[sec.Name], trim, sec.Name); w != "" {
				return w
			}
		}
	}
	return ""
}

// changedLogEntries names a Log-schema value (or section) whose existing
// entries after changes, or "": entries are only appended, and with trim
// the oldest may be dropped.
func changedLogEntries(s schema.Schema, before, after any, trim bool, path string) string {
	switch sc := schema.Deref(s).(type) {
	case schema.Log:
		b, _ := before.([]LogEntry)
		a, _ := after.([]LogEntry)
		nb, na := normEntries(b), normEntries(a)
		drop := 0
		if trim {
			// The longest suffix of before that starts after.
			for drop < len(nb) && !(len(na) >= len(nb)-drop && reflect.DeepEqual(nb[drop:], na[:len(nb)-drop])) {
				drop++
			}
		}
		if rest := nb[drop:]; len(na) < len(rest) || !reflect.DeepEqual(rest, na[:len(rest)]) {
			what := "log entries were changed or removed, not only appended"
			if path != "" {
				what = fmt.Sprintf("section %q %s", path, what)
			}
			return what
		}
	case schema.Composite:
		bm, _ := before.(map[string]any)
		am, _ := after.(map[string]any)
		for _, sec := range sc.Sections {
			if w := changedLogEntries(sec.Schema, bm[sec.Name], am[sec.Name], trim, sec.Name); w != "" {
				return w
			}
		}
	}
	return ""
}

// layoutProblems lists what the model cannot show: where the automerge
// document under node departs from the containers and value kinds schema
// s lays out (see initNode, writeField). A change made outside engram can
// add a root key the model never reads, turn a counter into a plain
// number (which reads the same but cannot be incremented), or store a
// number as a log message (which reads as ""). path names the node.
func layoutProblems(node *automerge.Map, s schema.Schema, path string, add func(error)) error {
	vals, err := node.Values()
	if err != nil {
		return err
	}
	var want string
	switch schema.Deref(s).(type) {
	case schema.Text:
		want = keyContent
	case schema.Map:
		want = keyFields
	case schema.List:
		want = keyItems
	case schema.Log:
		want = keyEntries
	case schema.Composite:
		want = keySections
	default:
		return fmt.Errorf("%w: unknown schema %T", ErrWrongSchema, s)
	}
	for k := range vals {
		if k != want {
			add(rootKeyProblem{invalidAt(joinField(path, k), "unknown key at the root of a %s document (want only %q)", s.Kind(), want)})
		}
	}
	v, ok := vals[want]
	if !ok {
		add(invalidAt(joinField(path, want), "missing"))
		return nil
	}
	wantKind := map[schema.Kind]automerge.Kind{schema.KindText: automerge.KindText, schema.KindMap: automerge.KindMap,
		schema.KindList: automerge.KindList, schema.KindLog: automerge.KindList, schema.KindComposite: automerge.KindMap}[s.Kind()]
	if v.Kind() != wantKind {
		add(invalidAt(joinField(path, want), "is %v, want %v", v.Kind(), wantKind))
		return nil
	}
	switch sc := schema.Deref(s).(type) {
	case schema.Map:
		fields, err := v.Map().Values()
		if err != nil {
			return err
		}
		for k, fv := range fields {
			f, ok := sc.Field(k)
			if !ok {
				add(invalidAt(joinField(path, k), "unknown field (known: %s)", fieldList(sc.Fields)))
				continue
			}
			if err := checkFieldKind(f, fv, joinField(path, k)); err != nil {
				add(err)
			}
		}
	case schema.List:
		items, err := v.List().Values()
		if err != nil {
			return err
		}
		for i, it := range items {
			at := fmt.Sprintf("%s[%d]", path, i)
			if it.Kind() != automerge.KindMap {
				add(invalidAt(at, "item is %v, want map", it.Kind()))
				continue
			}
			m, err := it.Map().Values()
			if err != nil {
				return err
			}
			for k, x := range m {
				switch {
				case k == keyValue && !isContainer(x.Kind()):
				case k == keyChecked && (x.Kind() == automerge.KindBool || x.Kind() == automerge.KindVoid):
				default:
					add(invalidAt(joinField(at, k), "unexpected %v in a list item (want value and checked)", x.Kind()))
				}
			}
		}
	case schema.Log:
		entries, err := v.List().Values()
		if err != nil {
			return err
		}
		for i, e := range entries {
			at := fmt.Sprintf("%s[%d]", path, i)
			if e.Kind() != automerge.KindMap {
				add(invalidAt(at, "entry is %v, want map", e.Kind()))
				continue
			}
			m, err := e.Map().Values()
			if err != nil {
				return err
			}
			for k, x := range m {
				switch k {
				case schema.LogMessage:
					if x.Kind() != automerge.KindStr {
						add(invalidAt(joinField(at, k), "is %v, want string", x.Kind()))
					}
				case schema.LogTimestamp:
					if x.Kind() != automerge.KindTime {
						add(invalidAt(joinField(at, k), "is %v, want timestamp", x.Kind()))
					}
				default:
					f, ok := sc.Field(k)
					if !ok {
						add(invalidAt(joinField(at, k), "unknown log entry field"))
					} else if err := checkFieldKind(f, x, joinField(at, k)); err != nil {
						add(err)
					}
				}
			}
			if _, ok := m[schema.LogMessage]; !ok {
				add(invalidAt(joinField(at, schema.LogMessage), "missing"))
			}
		}
	case schema.Composite:
		secs, err := v.Map().Values()
		if err != nil {
			return err
		}
		for k, sv := range secs {
			sec, ok := sc.Section(k)
			if !ok {
				add(invalidAt(joinField(path, k), "unknown section"))
				continue
			}
			if sv.Kind() != automerge.KindMap {
				add(invalidAt(joinField(path, k), "section is %v, want map", sv.Kind()))
				continue
			}
			if err := layoutProblems(sv.Map(), sec.Schema, joinField(path, k), add); err != nil {
				return err
			}
		}
	}
	return nil
}

// layoutSet is the set of a document's layout problems, by message.
func layoutSet(am *automerge.Doc, s schema.Schema) (map[string]error, error) {
	out := map[string]error{}
	err := guard(func() error {
		return layoutProblems(am.RootMap(), s, "", func(e error) { out[e.Error()] = e })
	})
	return out, err
}

// newLayoutProblem returns a layout problem of after that before did not
// have, or nil. Problems a document already had are not a change's doing
// (a field the schema dropped stays in the document, see SetInfo), so a
// change is refused only for the ones it brings.
func newLayoutProblem(before, after map[string]error) error {
	var first string
	for k := range after {
		if _, had := before[k]; !had && (first == "" || k < first) {
			first = k
		}
	}
	if first == "" {
		return nil
	}
	return after[first]
}

func isContainer(k automerge.Kind) bool {
	return k == automerge.KindMap || k == automerge.KindList || k == automerge.KindText || k == automerge.KindCounter
}

// checkFieldKind checks that a field holds the automerge kind its type is
// written as (initField, writeField): text in a Text, counters in a
// Counter, lists in a List, objects in a Map, the rest as scalars.
func checkFieldKind(f schema.FieldDef, v *automerge.Value, path string) error {
	k := v.Kind()
	if k == automerge.KindVoid || k == automerge.KindNull {
		return nil
	}
	var ok bool
	switch f.Type {
	case schema.FieldText:
		ok = k == automerge.KindText
	case schema.FieldCounter:
		ok = k == automerge.KindCounter
	case schema.FieldList:
		ok = k == automerge.KindList
	case schema.FieldObject:
		ok = k == automerge.KindMap
	case schema.FieldTimestamp:
		ok = k == automerge.KindTime
	default:
		ok = !isContainer(k)
	}
	if !ok {
		return invalidAt(path, "%s field holds %v", f.Type, k)
	}
	return nil
}

// rootKeyProblem marks a layout problem at a node's root: a key engram
// never writes, whatever the schema was when the document was made.
type rootKeyProblem struct{ error }

func (p rootKeyProblem) Unwrap() error { return p.error }

// LoadForeign opens a document that comes from outside the store — a
// dump's, which automerge JS or a Go program may have edited — and judges
// it as MergeChanges judges merged changes, so an import cannot bring in
// what a merge could not:
//
//   - the value must be valid under the schema, every part of it (there is
//     no trusted earlier state in the store to take parts from);
//   - no node may hold a key at its root that engram never writes (an
//     unknown root key), and no other layout problem (unknown field, wrong
//     container kind) that the document's engram-made state lacks;
//   - the changes not made by engram — whose message is not an engram
//     commit message, and everything built on them — are judged as a
//     transition from the state without them to the whole document, made
//     by the block's owner with the block's permission (CheckTransition).
//
// Engram-made changes are recognised by their commit messages, which
// anyone can imitate, and which changes merged from an automerge peer do
// not carry: this finds documents edited by tools that do not pretend to
// be engram, and a document whose foreign changes came through
// MergeChanges and were followed by edits the owner could not make (a
// read-only field set by the system) is judged as if the owner made them.
// LoadExported, given the heads the document had when it left the store,
// needs neither guess.
func LoadForeign(info Info, data []byte, opts *Options) (*Document, error) {
	return loadForeign(info, data, nil, opts)
}

// LoadExported is LoadForeign for a document whose heads when it left the
// store are known (a dump records them, see memory.Export): the changes
// those heads cover are the block's own history, made and judged in the
// store, whoever made them and whatever their messages say; every other
// change — an edit made to the document after it left — is judged as a
// transition from the state at those heads to the whole document, made by
// the block's owner with the block's permission. Heads the document does
// not hold fail with ErrCorrupt. With no heads it is LoadForeign.
func LoadExported(info Info, data []byte, heads []string, opts *Options) (*Document, error) {
	if len(heads) == 0 {
		return LoadForeign(info, data, opts)
	}
	hs, err := parseHeads(heads)
	if err != nil {
		return nil, fmt.Errorf("block %q of %q: exported heads: %w: %v", info.Label, info.Owner, ErrCorrupt, err)
	}
	return loadForeign(info, data, hs, opts)
}

// loadForeign is LoadForeign, or with exported heads LoadExported.
func loadForeign(info Info, data []byte, exported []automerge.ChangeHash, opts *Options) (*Document, error) {
	d, err := Load(info, data, opts)
	if err != nil {
		return nil, err
	}
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	fail := func(err error) (*Document, error) {
		return nil, fmt.Errorf("block %q of %q: %w", info.Label, info.Owner, err)
	}
	after, err := c.value()
	if err != nil {
		return fail(err)
	}
	size := c.size
	var (
		clean bool // every change is the block's own
		heads []automerge.ChangeHash
	)
	err = guard(func() error {
		if exported != nil {
			for _, h := range exported {
				if _, err := c.am.Change(h); err != nil {
					return fmt.Errorf("the document lacks change %s, one of the heads it was exported with", h)
				}
			}
			heads, clean = exported, sameHashes(c.am.Heads(), exported)
			return nil
		}
		chs, err := c.am.Changes()
		if err != nil {
			return err
		}
		ok := make(map[automerge.ChangeHash]bool, len(chs))
		depended := map[automerge.ChangeHash]bool{}
		n := 0
		for _, ch := range chs { // causal order: dependencies first
			var msg commitMessage
			good := json.Unmarshal([]byte(ch.Message()), &msg) == nil && msg.Actor != "" && msg.Op != ""
			for _, dep := range ch.Dependencies() {
				good = good && ok[dep]
			}
			if good {
				ok[ch.Hash()] = true
				n++
				for _, dep := range ch.Dependencies() {
					depended[dep] = true
				}
			}
		}
		for h := range ok {
			if !depended[h] {
				heads = append(heads, h)
			}
		}
		clean = n == len(chs)
		return nil
	})
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrCorrupt, err))
	}
	full, err := layoutSet(c.am, info.Schema)
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrCorrupt, err))
	}
	for _, k := range sortedKeys(full) {
		var rp rootKeyProblem
		if errors.As(full[k], &rp) {
			return fail(full[k])
		}
	}
	if err := validateModel(info.Schema, nil, after, ""); err != nil {
		return fail(err)
	}
	if clean {
		return d, nil
	}
	var (
		before     any
		beforeSize int
		prevLayout = map[string]error{}
	)
	if len(heads) > 0 {
		err = guard(func() error {
			fork, err := c.am.Fork(heads...)
			if err != nil {
				return err
			}
			if prevLayout, err = layoutSet(fork, info.Schema); err != nil {
				return err
			}
			if v, rerr := readNode(fork.RootMap(), info.Schema); rerr == nil {
				before, beforeSize = v, renderedSize(info.Schema, v)
			}
			return nil
		})
		if err != nil {
			return fail(fmt.Errorf("%w: %v", ErrCorrupt, err))
		}
	}
	if p := newLayoutProblem(prevLayout, full); p != nil {
		return fail(p)
	}
	t := transition{info: info, origin: Origin{Agent: info.Owner, Permission: info.Permission}, op: OpMerge,
		before: before, after: after, sizeBefore: beforeSize, sizeAfter: size}
	if err := judge(t); err != nil {
		what := "changes made outside engram"
		if exported != nil {
			what = "changes made after the export"
		}
		return fail(fmt.Errorf("%s: %w", what, err))
	}
	return d, nil
}

func sortedKeys(m map[string]error) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
