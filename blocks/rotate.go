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
	if req.op != OpAppendLogEntry || req.section != "" {
		return nil, schema.Log{}
	}
	r, ok := c.writer.(LogRotator)
	if !ok {
		return nil, schema.Log{}
	}
	ls, ok := schema.Deref(c.info.Schema).(schema.Log)
	if !ok || ls.Retention <= 0 {
		return nil, schema.Log{}
	}
	return r, ls
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
	rotate := func(node *automerge.Map) error {
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
	return next[n:], rotate, removed, size, len(r), nil
}
