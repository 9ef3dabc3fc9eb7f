package amchunk_test

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/internal/amchunk"
	"github.com/engram-go/engram/internal/testenv"
)

func deflate(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// A compressed change is inflated once to count its bytes and, within
// the limit, once more into a slice of its size, after its head has said
// that its columns account for them: one that inflates past the limit,
// or to more than its columns (compressed zeros), is refused having
// allocated next to nothing, and one within it allocates its size, where
// a growing buffer allocated about two and a half times the limit either
// way (a 64 KB frame cost the server 160 MiB of garbage, and every agent
// the collections it set off).
func TestMeasureInflatesOnce(t *testing.T) {
	lim := amchunk.Limits{Bytes: 32 << 20}
	values := chunk(2, deflate(change([2]any{5<<4 | 7, make([]byte, 16<<20)}))) // a 16 MiB value column
	for _, c := range []struct {
		name    string
		data    []byte
		refused bool
		bound   uint64
	}{
		{"inflating to 40 MiB, past the limit", chunk(2, deflate(append(change(), make([]byte, 40<<20)...))), true, 512 << 10},
		{"16 MiB of zeros after its columns", chunk(2, deflate(append(change(), make([]byte, 16<<20)...))), true, 512 << 10},
		{"a 16 MiB value column", values, false, 16<<20 + 512<<10},
	} {
		var err error
		a := testenv.HeapAllocated(func() { _, err = amchunk.Measure(c.data, lim) })
		if c.refused != errors.Is(err, amchunk.ErrTooCostly) || !c.refused && err != nil || a > c.bound {
			t.Errorf("a compressed change of %d bytes, %s: err %v, %d bytes allocated; want refused %v, at most %d", len(c.data), c.name, err, a, c.refused, c.bound)
		}
	}
}

// A change is its columns: a change with more bytes after them than a
// change has room for (automerge keeps such bytes for later formats, and
// makes none) is refused as too costly, so that a few kilobytes of
// compressed zeros cannot make the server, and then automerge, inflate
// megabytes that describe nothing. A change automerge made measures the
// same compressed as not.
func TestMeasureRefusesBytesAfterTheColumns(t *testing.T) {
	lim := amchunk.Limits{Bytes: 32 << 20}
	for _, c := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"compressed, 8 MiB of zeros after the columns", chunk(2, deflate(append(change(), make([]byte, 8<<20)...))), false},
		{"64 KiB of zeros after the columns", chunk(1, append(change(), make([]byte, 64<<10)...)), false},
		{"compressed, nothing after the columns", chunk(2, deflate(change())), true},
		{"a kilobyte after the columns", chunk(1, append(change(), make([]byte, 1<<10)...)), true},
	} {
		_, err := amchunk.Measure(c.data, lim)
		if c.ok != (err == nil) || !c.ok && !errors.Is(err, amchunk.ErrTooCostly) {
			t.Errorf("%s: err %v, want ok %v (else ErrTooCostly)", c.name, err, c.ok)
		}
	}
	doc := automerge.New()
	if err := doc.RootMap().Set("text", automerge.NewText(strings.Repeat("a line of text\n", 2000))); err != nil {
		t.Fatal(err)
	}
	ch, err := doc.Commit("x")
	if err != nil {
		t.Fatal(err)
	}
	c, err := doc.Change(ch)
	if err != nil {
		t.Fatal(err)
	}
	plain := c.Save()
	if plain[8] != 1 {
		t.Fatalf("automerge saved a chunk of type %d", plain[8])
	}
	body := plain[9+uvarintLen(plain[9:]):]
	want, err := amchunk.Measure(plain, amchunk.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := amchunk.Measure(chunk(2, deflate(body)), amchunk.Limits{})
	if err != nil || got.Ops != want.Ops || got.Changes != want.Changes || got.ValueBytes != want.ValueBytes || got.Refs != want.Refs {
		t.Errorf("automerge's change compressed: %+v, err %v; plain: %+v", got, err, want)
	}
}

func uvarintLen(b []byte) int {
	n := 0
	for n < len(b) && b[n]&0x80 != 0 {
		n++
	}
	return n + 1
}

// A deflated column (a saved document's; automerge compresses a change
// whole, never its columns, and a change with one is refused) is
// inflated only once it is counted: raw values are counted without being
// held (a 60 MiB column past the values' limit allocates nothing), and a
// column of compressed zeros, which describes no rows (automerge writes
// no empty run), is refused when its parse meets the first one.
func TestMeasureDeflatedColumns(t *testing.T) {
	lim := amchunk.Limits{Ops: 4 << 20, Refs: 4 << 20, ValueBytes: 16 << 20, Bytes: 65 << 20}
	zeros := deflate(make([]byte, 60<<20))
	for _, c := range []struct {
		name  string
		spec  int
		want  error
		bound uint64
	}{
		{"raw values", 5<<4 | 7 | 8, amchunk.ErrTooCostly, 512 << 10},
		{"an integer column", 1<<4 | 1 | 8, amchunk.ErrFormat, 60<<20 + 512<<10},
		{"a delta column", 4<<4 | 2 | 8, amchunk.ErrFormat, 60<<20 + 512<<10},
		{"a string column", 1<<4 | 5 | 8, amchunk.ErrFormat, 60<<20 + 512<<10},
		{"a boolean column", 3<<4 | 4 | 8, amchunk.ErrFormat, 60<<20 + 512<<10},
		{"a group column", 7<<4 | 8, amchunk.ErrFormat, 60<<20 + 512<<10},
	} {
		data := chunk(0, document([2]any{c.spec, zeros}))
		var err error
		a := testenv.HeapAllocated(func() { _, err = amchunk.Measure(data, lim) })
		if !errors.Is(err, c.want) || a > c.bound {
			t.Errorf("a document's %s of 60 MiB of zeros, deflated to %d bytes: err %v, %d bytes allocated; want %v and at most %d", c.name, len(zeros), err, a, c.want, c.bound)
		}
	}
	if _, err := amchunk.Measure(chunk(1, change([2]any{5<<4 | 7 | 8, deflate([]byte("abc"))})), amchunk.Limits{}); !errors.Is(err, amchunk.ErrFormat) {
		t.Errorf("a change with a deflated column: err %v, want ErrFormat", err)
	}
	if _, err := amchunk.Measure(chunk(2, deflate(change([2]any{5<<4 | 7 | 8, deflate([]byte("abc"))}))), amchunk.Limits{}); !errors.Is(err, amchunk.ErrFormat) {
		t.Errorf("a compressed change with a deflated column: err %v, want ErrFormat", err)
	}
	// Empty runs are refused wherever they are; the first run of a
	// boolean column (of falses) may be empty.
	for _, c := range []struct {
		name string
		col  [2]any
		ok   bool
	}{
		{"a boolean column starting with true", [2]any{3<<4 | 4, []byte{0, 2}}, true},
		{"an empty boolean run after the first", [2]any{3<<4 | 4, []byte{1, 0, 1}}, false},
		{"a null run of no nulls", [2]any{1<<4 | 1, []byte{0, 0}}, false},
		{"a null run of two", [2]any{1<<4 | 1, []byte{0, 2}}, true},
	} {
		_, err := amchunk.Measure(chunk(1, change(c.col)), amchunk.Limits{})
		if c.ok != (err == nil) || !c.ok && !errors.Is(err, amchunk.ErrFormat) {
			t.Errorf("%s: err %v, want ok %v (else ErrFormat)", c.name, err, c.ok)
		}
	}
}

// Each DEFLATE stream is read with one reader, reset: a new one allocates
// its 32 KiB window and tables (about 40 KB), so a 4-byte empty deflated
// column cost 40 KB per read, and a 20 KB document of 5,000 of them (or a
// frame of tiny compressed changes) hundreds of MB of garbage.
func TestMeasureEmptyDeflateStreamsCostNothing(t *testing.T) {
	lim := amchunk.Limits{Changes: 5_256, Ops: 21_024, Refs: 21_024, ValueBytes: 96_384, Bytes: 1_368_576} // blocks.MergeLimits(5_000)
	cols := make([][2]any, 5_000)
	for i := range cols {
		cols[i] = [2]any{1<<4 | 2 | 8, []byte{3, 0}} // a deflated integer column, no rows
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"a document of 5,000 empty deflated columns", chunk(0, document(cols...))},
		{"1,000 compressed empty changes", bytes.Repeat(chunk(2, deflate(change())), 1_000)},
	} {
		var err error
		a := testenv.HeapAllocated(func() { _, err = amchunk.Measure(c.data, lim) })
		if err == nil && a > 16<<20 {
			t.Errorf("%s (%d bytes): accepted having allocated %d MiB; want at most 16", c.name, len(c.data), a>>20)
		}
	}
}

// A compressed change's head is read as it inflates, however long it is
// (a long message, many dependencies), and its columns' lengths with it:
// zeros after the columns, or a raw value column longer than the values
// left, are refused having held none of it.
func TestMeasureCompressedHeadRead(t *testing.T) {
	lim := amchunk.Limits{ValueBytes: 1 << 20, Bytes: 32 << 20}
	deps := func(n int) []byte {
		b := binary.AppendUvarint(nil, uint64(n))
		b = append(b, make([]byte, 32*n)...)
		return append(b, change()[1:]...)
	}
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"a 64 KiB message, then 16 MiB of zeros after the columns", append(changeWithMessage(64<<10), make([]byte, 16<<20)...)},
		{"2,048 dependencies, then 16 MiB of zeros after the columns", append(deps(2048), make([]byte, 16<<20)...)},
		{"a 16 MiB raw value column of zeros, values limited to 1 MiB", change([2]any{5<<4 | 7, make([]byte, 16<<20)})},
	} {
		data := chunk(2, deflate(c.body))
		var err error
		a := testenv.HeapAllocated(func() { _, err = amchunk.Measure(data, lim) })
		if !errors.Is(err, amchunk.ErrTooCostly) || a > 512<<10 {
			t.Errorf("%s (a %d-byte chunk): err %v, %d bytes allocated; want ErrTooCostly having allocated at most 512 KiB", c.name, len(data), err, a)
		}
	}
	// Around the first 64 KiB (where the head was once read from), a
	// compressed change measures as the same change uncompressed.
	cols := [][2]any{{1<<4 | 1, []byte{0x7f, 0}}, {2<<4 | 2, []byte{1, 5}}, {5<<4 | 6, []byte{1, 0x16}}, {5<<4 | 7, make([]byte, 20000)}}
	for msg := 65536 - 64; msg <= 65536+8; msg += 3 {
		for _, extra := range []int{0, 1, amchunk.MaxExtraBytes} {
			body := append(changeWithMessage(msg, cols...), make([]byte, extra)...)
			want, err := amchunk.Measure(chunk(1, body), amchunk.Limits{})
			if err != nil {
				t.Fatalf("message %d, %d extra, uncompressed: %v", msg, extra, err)
			}
			got, err := amchunk.Measure(chunk(2, deflate(body)), amchunk.Limits{})
			got.Bytes, want.Bytes = 0, 0
			if err != nil || got != want {
				t.Errorf("message %d, %d extra, compressed: %+v, %v; uncompressed %+v", msg, extra, got, err, want)
			}
		}
	}
}

// changeWithMessage is change() with a message of msg bytes.
func changeWithMessage(msg int, cols ...[2]any) []byte {
	b := []byte{0}
	b = append(b, 1, 0xaa, 1, 1, 0)
	b = binary.AppendUvarint(b, uint64(msg))
	b = append(b, make([]byte, msg)...)
	b = append(b, 0)
	return appendColumns(b, cols...)
}
