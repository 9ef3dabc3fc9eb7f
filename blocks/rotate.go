package blocks

import (
	"fmt"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/internal/blockhook"
	"github.com/engram-go/engram/schema"
)

// logRotator is implemented by a store's Writer that rotates its Log
// blocks (blockseam.LogRotator).
type logRotator = blockhook.LogRotator[LogEntry]

// logRotation returns the rotator and schema of an edit that rotates
// (see blockseam.LogRotator): an append to a Log block whose schema sets
// a Retention, on a document whose Writer rotates; otherwise a nil
// rotator. Caller holds mu.
func (c *core) logRotation(req request) (logRotator, schema.Log) {
	if req.op != OpAppendLogEntry {
		return nil, schema.Log{}
	}
	r, ok := c.writer.(logRotator)
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
// Log block, else a Composite's Log section) when it sets a Retention: on
// a document a store manages, an append to it rotates as part of the
// append (the oldest entries move to the store's archival memory).
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
// blockseam.LogRotator): next is the block's entries with the new one
// last. It returns the entries kept, the CRDT operations that make them (the
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
