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
	if size := runeLen(r); size > lim && n < len(next)-1 {
		// Rendering the block once per entry rotated out costs entries ×
		// block: guess the count as a Log block does (each entry takes
		// its own rendering and a newline off), check it, and bisect
		// from there if it misses. The block shrinks as entries go, so
		// the fewest that fit is where fitting starts.
		guess := n
		for size > lim && guess < len(next)-1 {
			size -= runeLen(render(ls, next[guess:guess+1], renderFull)) + 1
			guess++
		}
		fits := func(k int) bool { return runeLen(render(s, with(next[k:]), renderFull)) <= lim }
		n = fewestFitting(n+1, len(next)-1, guess, fits)
		n = min(n, len(next)-1) // none fits: the error below says so
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

// fewestFitting is the least k in [lo, hi] for which fits holds, where
// fits holds from some k on (hi+1 if for none). It probes guess and its
// neighbour on the answer's side first (two probes when guess is right),
// then bisects.
func fewestFitting(lo, hi, guess int, fits func(int) bool) int {
	if lo > hi {
		return lo
	}
	probe := min(max(guess, lo), hi)
	if fits(probe) {
		hi = probe - 1
		if lo <= hi {
			if !fits(hi) {
				return probe
			}
			hi-- // hi fits: the answer is at most hi
		}
	} else {
		lo = probe + 1
		if lo <= hi {
			if fits(lo) {
				return lo
			}
			lo++
		}
	}
	for lo <= hi { // the answer is in [lo, hi+1]
		mid := lo + (hi-lo)/2
		if fits(mid) {
			hi = mid - 1
		} else {
			lo = mid + 1
		}
	}
	return lo
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
