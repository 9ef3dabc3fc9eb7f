package blocks

import (
	"errors"
	"fmt"

	"github.com/engram-go/engram/internal/amchunk"
)

// MergeLimits is what one merge into a block of character limit limit may
// ask of it, measured from the merged chunks before anything is applied:
// changes, one per character of the limit plus 256 (a peer that commits
// every keystroke fills the block within it; each change, even an empty
// one, is kept in the block's history); operations and the earlier operations they overwrite or delete, 4 per
// character of the limit plus 1,024; value bytes (UTF-8 text, map keys,
// scalar values), 16 per character plus 16 KiB; bytes after inflating, 64
// per character plus 1 MiB. An edit that keeps the block within its limit
// fits with room: a whole rewrite of a full text deletes and inserts at
// most two operations per character. Automerge spends about as much CPU
// and memory per operation as the bytes that describe them are cheap (a
// frame of 1 MB can insert a million characters), so a merge past these
// is refused before automerge sees it. A whole saved document may hold as
// much again as the block's own document does: its history comes with it.
func MergeLimits(limit int) amchunk.Limits {
	l := int64(max(limit, 0))
	return amchunk.Limits{
		Changes:    l + 256,
		Ops:        4*l + 1024,
		Refs:       4*l + 1024,
		ValueBytes: 16*l + 16<<10,
		Bytes:      64*l + 1<<20,
	}
}

// affordable refuses data whose chunks ask more of c than MergeLimits
// allows, wrapping ErrLimit (ErrCorrupt for bytes that are not chunks).
// Caller does not hold mu.
func (c *core) affordable(data []byte) error {
	lim := MergeLimits(c.info.limit())
	if amchunk.HoldsDocument(data) {
		var own []byte
		c.mu.Lock()
		err := guard(func() error { own = c.am.Save(); return nil })
		c.mu.Unlock()
		if err != nil {
			return fmt.Errorf("block %q: merge changes: %w", c.info.Label, err)
		}
		if cur, err := amchunk.Measure(own, amchunk.Limits{}); err == nil {
			lim.Changes += cur.Changes
			lim.Ops += cur.Ops
			lim.Refs += cur.Refs
			lim.ValueBytes += cur.ValueBytes
			lim.Bytes += cur.Bytes
		}
	}
	_, err := amchunk.Measure(data, lim)
	switch {
	case errors.Is(err, amchunk.ErrTooCostly):
		return fmt.Errorf("block %q: merge changes: %w: the changes ask too much of a block of %d characters (%v); nothing was applied",
			c.info.Label, ErrLimit, c.info.limit(), err)
	case err != nil:
		return fmt.Errorf("block %q: merge changes: %w: %v", c.info.Label, ErrCorrupt, err)
	}
	return nil
}
