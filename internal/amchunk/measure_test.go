package amchunk_test

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/internal/amchunk"
)

// since returns the bytes of doc's changes since before (its heads
// before an edit; reading the heads commits pending edits).
func since(t *testing.T, doc *automerge.Doc, before []automerge.ChangeHash) []byte {
	t.Helper()
	chs, err := doc.Changes(before...)
	if err != nil {
		t.Fatal(err)
	}
	return automerge.SaveChanges(chs)
}

// TestMeasureCountsWhatAutomergeMade compares Measure's counts with the
// operations automerge-go made for known edits.
func TestMeasureCountsWhatAutomergeMade(t *testing.T) {
	doc := automerge.New()
	type step struct {
		name            string
		edit            func() error
		ops, refs, vals int64
	}
	var text *automerge.Text
	steps := []step{
		{"make a text and insert 5 characters", func() error {
			if err := doc.RootMap().Set("t", automerge.NewText("")); err != nil {
				return err
			}
			text = doc.Path("t").Text()
			return text.Insert(0, "hello")
		}, 6, 0, 1 + 5}, // the key "t", then the characters
		{"delete 2 characters", func() error { return text.Delete(1, 2) }, 2, 2, 0},
		{"insert 1,000 characters", func() error { return text.Append(strings.Repeat("x", 1000)) }, 1000, 0, 1000},
		{"set 3 keys", func() error {
			m := doc.RootMap()
			for _, k := range []string{"alpha", "beta", "gamma"} {
				if err := m.Set(k, "v"); err != nil {
					return err
				}
			}
			return nil
		}, 3, 0, 14 + 3}, // keys and values
		{"overwrite a key", func() error { return doc.RootMap().Set("alpha", "w") }, 1, 1, 5 + 1},
		{"a counter and an increment", func() error {
			if err := doc.RootMap().Set("c", automerge.NewCounter(1)); err != nil {
				return err
			}
			return doc.Path("c").Counter().Inc(2)
		}, 2, 1, -1},
		{"a list of 100 items", func() error {
			l := automerge.NewList()
			if err := doc.RootMap().Set("l", l); err != nil {
				return err
			}
			for i := range 100 {
				if err := l.Append(int64(i)); err != nil {
					return err
				}
			}
			return nil
		}, 101, 0, -1},
	}
	for _, s := range steps {
		before := doc.Heads()
		if err := s.edit(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		data := since(t, doc, before)
		c, err := amchunk.Measure(data, amchunk.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if c.Changes != 1 || c.Ops != s.ops || c.Refs != s.refs || (s.vals >= 0 && c.ValueBytes != s.vals) {
			t.Errorf("%s: %+v, want 1 change, %d ops, %d refs, %d value bytes", s.name, c, s.ops, s.refs, s.vals)
		}
	}
	all := doc.Save()
	c, err := amchunk.Measure(all, amchunk.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// A document keeps deletions as successors of what they deleted, not
	// as operations: the two deleted characters' deletions are not rows.
	if c.Documents != 1 || c.Changes != int64(len(steps)) || c.Ops != 6+1000+3+1+2+101 {
		t.Errorf("document: %+v", c)
	}
}

// chunk wraps contents in a chunk header of type typ (the checksum is
// not checked by Measure and left zero).
func chunk(typ byte, contents []byte) []byte {
	b := []byte{0x85, 0x6f, 0x4a, 0x83, 0, 0, 0, 0, typ}
	b = binary.AppendUvarint(b, uint64(len(contents)))
	return append(b, contents...)
}

// change builds the contents of a change chunk with the given op columns
// (spec, data).
func change(cols ...[2]any) []byte {
	b := []byte{0}         // no dependencies
	b = append(b, 1, 0xaa) // actor
	b = append(b, 1, 1)    // seq, start op
	b = append(b, 0)       // time
	b = append(b, 0)       // message
	b = append(b, 0)       // other actors
	return appendColumns(b, cols...)
}

// appendColumns appends cols (spec, data) to b as a chunk lays them out:
// their count, each one's spec and length, then their data.
func appendColumns(b []byte, cols ...[2]any) []byte {
	b = binary.AppendUvarint(b, uint64(len(cols)))
	for _, c := range cols {
		b = binary.AppendUvarint(b, uint64(c[0].(int)))
		b = binary.AppendUvarint(b, uint64(len(c[1].([]byte))))
	}
	for _, c := range cols {
		b = append(b, c[1].([]byte)...)
	}
	return b
}

// document builds the contents of a document chunk with no actors,
// heads or changes, and the given op columns (spec, data).
func document(cols ...[2]any) []byte {
	b := []byte{0, 0, 0} // no actors, no heads, no change columns
	return appendColumns(b, cols...)
}

// TestMeasureRefusesBombs: a few bytes that describe very many
// operations, references, values or inflated bytes are refused with
// ErrTooCostly, in time proportional to the bytes.
func TestMeasureRefusesBombs(t *testing.T) {
	lim := amchunk.Limits{Ops: 20_000, Refs: 20_000, ValueBytes: 100_000, Bytes: 1 << 20}
	actionRun := func(n int64) []byte { return append(slebBytes(n), 1) } // n × action 1
	deflated := func(b []byte) []byte {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.BestCompression)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"a run of a trillion actions", chunk(1, change([2]any{4<<4 | 2, actionRun(1e12)}))},
		{"runs adding up past the limit", chunk(1, change([2]any{4<<4 | 2, bytes.Repeat(actionRun(10_000), 3)}))},
		{"a boolean column of a trillion rows", chunk(1, change([2]any{3<<4 | 4, binary.AppendUvarint(nil, 1e12)}))},
		{"a group of a trillion references", chunk(1, change([2]any{7 << 4, append(slebBytes(1), binary.AppendUvarint(nil, 1e12)...)}))},
		{"a group run of a million × a million", chunk(1, change([2]any{7 << 4, append(slebBytes(1e6), binary.AppendUvarint(nil, 1e6)...)}))},
		{"a megabyte of values", chunk(1, change([2]any{5<<4 | 7, make([]byte, 1<<20)}))},
		{"a string repeated a billion times", chunk(1, change([2]any{1<<4 | 5, append(slebBytes(1e9), 3, 'k', 'e', 'y')}))},
		{"a null run past the limit", chunk(1, change([2]any{1<<4 | 1, append(slebBytes(0), binary.AppendUvarint(nil, 1e9)...)}))},
		{"a deflated column inflating to 64 MiB", chunk(0, document([2]any{5<<4 | 7 | 8, deflated(make([]byte, 64<<20))}))},
		{"a compressed change inflating past the limit", chunk(2, deflated(append(change(), make([]byte, 8<<20)...)))},
		{"ten thousand changes of three ops each", bytes.Repeat(chunk(1, change([2]any{4<<4 | 2, actionRun(3)})), 10_000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := amchunk.Measure(tt.data, lim)
			if !errors.Is(err, amchunk.ErrTooCostly) {
				t.Fatalf("err %v, want ErrTooCostly", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestMeasureRefusesNonChunks: what is not automerge data wraps ErrFormat.
func TestMeasureRefusesNonChunks(t *testing.T) {
	for _, data := range [][]byte{
		nil,
		[]byte("hello"),
		{0x85, 0x6f, 0x4a, 0x83},
		chunk(7, nil),
		chunk(1, []byte{5}), // five dependencies, no hashes
		append(chunk(1, change()), 0x85),
		chunk(1, change([2]any{4<<4 | 2, []byte{0x80}})), // a number cut off
	} {
		if _, err := amchunk.Measure(data, amchunk.Limits{}); !errors.Is(err, amchunk.ErrFormat) {
			t.Errorf("%x: err %v, want ErrFormat", data, err)
		}
	}
}

func slebBytes(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// FuzzMeasure: any bytes are measured or refused, never a panic, and
// quickly.
func FuzzMeasure(f *testing.F) {
	doc := automerge.New()
	doc.RootMap().Set("t", automerge.NewText("hello"))
	doc.Path("l").Set(automerge.NewList())
	doc.Path("l").List().Append("a", int64(2))
	f.Add(doc.Save())
	chs, _ := doc.Changes()
	f.Add(automerge.SaveChanges(chs))
	f.Add(chunk(1, change([2]any{4<<4 | 2, append(slebBytes(-3), 1, 2, 3)})))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := amchunk.Measure(data, amchunk.Limits{Ops: 1 << 20, Bytes: 1 << 20})
		if err == nil && c.Changes == 0 && c.Documents == 0 {
			t.Fatalf("measured %x as nothing", data)
		}
	})
}
