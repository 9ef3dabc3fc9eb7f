package blocks

import (
	"fmt"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/schema"
)

// LogRotator is implemented by a Writer that keeps the oldest entries of
// its Log blocks elsewhere (a store moves them to archival memory). On a
// document whose Writer is one, an append to a Log block whose schema sets
// a Retention rotates as part of the append itself, in the same automerge
// change and so in the same Write: it removes the oldest entries until at
// most Retention remain and the block, new entry included, fits its
// character limit. A full log therefore never refuses an append; only an
// entry too large for the block on its own is refused (ErrLimit). Being
// part of the write, rotation happens on every path that appends (the
// store's edits, its tools, a view from the store) and commits with it or
// not at all.
type LogRotator interface {
	// RotateLog is called inside Write's apply, once the append is
	// applied, with the entries it removed, oldest first, for the Writer
	// to persist in the transaction that persists the append. It is not
	// called when the append removed nothing. A Writer that applies an
	// edit again (after an Undo) gets the call again; the last one holds.
	RotateLog(removed []LogEntry)
}

// logRotation returns the rotator and schema of an edit that rotates (see
// LogRotator): an append to a Log block whose schema sets a Retention, on
// a document whose Writer rotates; otherwise a nil rotator. Caller holds
// mu.
func (c *core) logRotation(req request) (LogRotator, schema.Log) {
	if req.op != OpAppendLogEntry {
		return nil, schema.Log{}
	}
	r, ok := c.writer.(LogRotator)
	if !ok {
		return nil, schema.Log{}
	}
	ls, ok := LogRetention(c.info.Schema, req.section)
	if !ok {
		return nil, schema.Log{}
	}
	return r, ls
}

// LogRetention returns the Log schema of a block's log (section "" for a
// Log block, else a Composite's Log section) when it sets a Retention: an
// append to it rotates (see LogRotator).
func LogRetention(s schema.Schema, section string) (schema.Log, bool) {
	s = schema.Deref(s)
	if section != "" {
		comp, ok := s.(schema.Composite)
		if !ok {
			return schema.Log{}, false
		}
		sec, ok := comp.Section(section)
		if !ok {
			return schema.Log{}, false
		}
		s = schema.Deref(sec.Schema)
	}
	ls, ok := s.(schema.Log)
	return ls, ok && ls.Retention > 0
}

// rotateSectionAppend is rotateAppend for a Log section of a Composite
// block: next is the section's entries with the new one last, full the
// block's value before the append. The block's full rendering (every
// section) must fit lim, so each candidate is rendered whole.
func rotateSectionAppend(s schema.Schema, ls schema.Log, section string, full map[string]any, next []LogEntry, lim int, label, who string,
	apply func(*automerge.Map) error) (map[string]any, func(*automerge.Map) error, []LogEntry, int, int, error) {
	with := func(entries []LogEntry) map[string]any {
		m := cloneValue(full).(map[string]any)
		m[section] = entries
		return m
	}
	n := max(0, len(next)-ls.Retention)
	m := with(next[n:])
	r := render(s, m, renderFull)
	for runeLen(r) > lim && n < len(next)-1 {
		n++
		m = with(next[n:])
		r = render(s, m, renderFull)
	}
	if size := runeLen(r); size > lim {
		return nil, nil, nil, 0, 0, fmt.Errorf("%w: block %q: agent %q's log entry in section %q makes the block %d characters even with the section's older entries rotated out, more than its limit %d",
			ErrLimit, label, who, section, size, lim)
	}
	if n == 0 {
		return m, apply, nil, runeLen(r), len(r), nil
	}
	removed := append([]LogEntry(nil), next[:n]...)
	rotate := dropOldest(n, apply)
	return m, rotate, removed, runeLen(r), len(r), nil
}

// rotateAppend is the rotation of an append to a Log block (see
// LogRotator): next is the block's entries with the new one last. It
// returns the entries kept, the CRDT operations that make them (the
// removals, then the append's own apply), the removed entries and the
// kept entries' full rendering size in runes and bytes.
func rotateAppend(s schema.Schema, ls schema.Log, next []LogEntry, lim int, label, who string,
	apply func(*automerge.Map) error) ([]LogEntry, func(*automerge.Map) error, []LogEntry, int, int, error) {
	n := max(0, len(next)-ls.Retention)
	r := render(s, next[n:], renderFull)
	size := runeLen(r)
	if size > lim {
		// The full rendering of a log is its entries' renderings joined
		// by newlines, whatever their order: each removed entry takes its
		// own characters and one newline off.
		for size > lim && n < len(next)-1 {
			size -= runeLen(render(s, next[n:n+1], renderFull)) + 1
			n++
		}
		if size > lim {
			return nil, nil, nil, 0, 0, fmt.Errorf("%w: block %q: agent %q's log entry alone is %d characters, more than the block's limit %d (rotating older entries out cannot make room)",
				ErrLimit, label, who, size, lim)
		}
		r = render(s, next[n:], renderFull)
	}
	if n == 0 {
		return next, apply, nil, size, len(r), nil
	}
	removed := append([]LogEntry(nil), next[:n]...)
	rotate := dropOldest(n, apply)
	return next[n:], rotate, removed, size, len(r), nil
}

// dropOldest is apply preceded by the removal of a log's n oldest entries
// (the entries list of the node apply is given).
func dropOldest(n int, apply func(*automerge.Map) error) func(*automerge.Map) error {
	return func(node *automerge.Map) error {
		l, err := getList(node, keyEntries)
		if err != nil {
			return err
		}
		for range n {
			if err := l.Delete(0); err != nil {
				return err
			}
		}
		return apply(node)
	}
}
