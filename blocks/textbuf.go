package blocks

import "unsafe"

// textBufFrom is the smallest text whose appends reuse a textBuf: below
// it, copying the text is cheaper than keeping spare room.
const textBufFrom = 4 << 10

// textBuf lets an append to a long Text block build the new value without
// copying the old one, so an append costs the same at 140k characters as
// at 1k. The block's current text is a string viewing the buffer's
// bytes; an append whose base is exactly that string (same bytes, same
// length) writes after them, where no string looks, and returns a longer
// view. Bytes under a string are never written again, which is what
// unsafe.String requires; when the buffer must grow, append moves it and
// the strings already made keep the old array. Any other base (an older
// value after a refused edit, another section's text, a value re-read from
// the document) is copied into a fresh buffer.
type textBuf struct {
	b []byte
}

// concat returns cur + add.
func (t *textBuf) concat(cur, add string) string {
	if len(cur)+len(add) < textBufFrom {
		return cur + add
	}
	if len(cur) != len(t.b) || len(cur) == 0 || unsafe.StringData(cur) != unsafe.SliceData(t.b) {
		t.b = make([]byte, 0, len(cur)+len(add)+len(cur)/4)
		t.b = append(t.b, cur...)
	}
	t.b = append(t.b, add...)
	return unsafe.String(unsafe.SliceData(t.b), len(t.b))
}
