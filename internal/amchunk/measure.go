package amchunk

import (
	"bufio"
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"math"
)

// Cost is what applying some chunks would ask of a document.
type Cost struct {
	// Changes counts change chunks, and the changes a document chunk
	// holds.
	Changes int64
	// Documents counts whole-document chunks.
	Documents int
	// Ops counts operations: every character or item inserted, every key
	// set, object made, value deleted, counter incremented or mark set.
	Ops int64
	// Refs counts the predecessor references of the operations: what they
	// overwrite or delete.
	Refs int64
	// ValueBytes counts the bytes of values and strings (map keys, mark
	// names) the operations carry.
	ValueBytes int64
	// Bytes counts the bytes read, compressed chunks and columns counted
	// after inflating.
	Bytes int64
}

// Limits bound what Measure accepts. A zero field means no bound, but
// for Bytes, whose zero means DefaultMaxBytes: compressed data is never
// inflated without a bound.
type Limits struct {
	Changes    int64
	Ops        int64
	Refs       int64
	ValueBytes int64
	Bytes      int64
}

// DefaultMaxBytes is what Measure inflates at most when Limits.Bytes is 0.
const DefaultMaxBytes = 64 << 20

var magic = []byte{0x85, 0x6f, 0x4a, 0x83}

// Chunk types.
const (
	chunkDocument   = 0
	chunkChange     = 1
	chunkCompressed = 2
)

// Column value types (the low three bits of a column's spec).
const (
	colGroup      = 0
	colActor      = 1
	colInt        = 2
	colDelta      = 3
	colBool       = 4
	colString     = 5
	colValueMeta  = 6
	colValueRaw   = 7
	colDeflateBit = 8
)

// IsAutomerge reports whether data starts as an automerge chunk does.
func IsAutomerge(data []byte) bool { return bytes.HasPrefix(data, magic) }

// HoldsDocument reports whether data, automerge chunks, holds a whole
// document chunk. It reads only the chunks' headers, and stops at the first
// bytes that are not one.
func HoldsDocument(data []byte) bool {
	r := reader{b: data}
	for !r.done() {
		head, err := r.take(len(magic) + 4 + 1)
		if err != nil || !bytes.Equal(head[:len(magic)], magic) {
			return false
		}
		if head[len(head)-1] == chunkDocument {
			return true
		}
		n, err := r.uleb()
		if err != nil || n > uint64(r.left()) {
			return false
		}
		r.i += int(n)
	}
	return false
}

// Measure reads data, one or more concatenated automerge chunks, and
// returns what applying them would cost. It stops with an error wrapping
// ErrTooCostly as soon as a measure passes its limit (the Cost so far is
// returned with it), and with one wrapping ErrFormat for bytes that are
// not chunks. Its time is proportional to len(data) plus the bytes it
// inflates, which lim.Bytes bounds.
func Measure(data []byte, lim Limits) (Cost, error) {
	return MeasureAll([][]byte{data}, lim)
}

// MeasureAll is Measure over the chunks of every element of data
// together, as if they were one (a sync message's changes): lim bounds
// their sum.
func MeasureAll(data [][]byte, lim Limits) (Cost, error) {
	m := measurer{lim: lim}
	if m.lim.Bytes <= 0 {
		m.lim.Bytes = DefaultMaxBytes
	}
	for _, b := range data {
		if len(b) == 0 {
			return m.cost, fmt.Errorf("%w: no bytes", ErrFormat)
		}
		r := reader{b: b}
		for !r.done() {
			if err := m.chunk(&r); err != nil {
				return m.cost, err
			}
		}
	}
	return m.cost, nil
}

type measurer struct {
	lim  Limits
	cost Cost
	// One DEFLATE reader and its source, reset for each stream: a new
	// reader allocates its 32 KiB window and tables (about 40 KB), and a
	// deflated column can be 4 bytes of a frame.
	fl  io.ReadCloser
	src bytes.Reader
	buf *bufio.Reader // over fl, for a compressed change's head
}

// deflate is a reader of data's DEFLATE stream, reusing m's.
func (m *measurer) deflate(data []byte) io.Reader {
	m.src.Reset(data)
	if m.fl == nil {
		m.fl = flate.NewReader(&m.src)
	} else if err := m.fl.(flate.Resetter).Reset(&m.src, nil); err != nil {
		m.fl = flate.NewReader(&m.src)
	}
	return m.fl
}

func (m *measurer) chunk(r *reader) error {
	start := r.i
	head, err := r.take(len(magic) + 4 + 1)
	if err != nil {
		return err
	}
	if !bytes.Equal(head[:len(magic)], magic) {
		return fmt.Errorf("%w: no chunk header at byte %d", ErrFormat, start)
	}
	typ := head[len(head)-1]
	n, err := r.uleb()
	if err != nil {
		return err
	}
	if n > uint64(r.left()) {
		return fmt.Errorf("%w: chunk at byte %d claims %d bytes, %d remain", ErrFormat, start, n, r.left())
	}
	body, _ := r.take(int(n))
	if err := m.addBytes(int64(r.i - start)); err != nil {
		return err
	}
	switch typ {
	case chunkChange:
		return m.change(body)
	case chunkCompressed:
		raw, err := m.inflateChange(body)
		if err != nil {
			return err
		}
		return m.change(raw)
	case chunkDocument:
		return m.document(body)
	}
	return fmt.Errorf("%w: unknown chunk type %d at byte %d", ErrFormat, typ, start)
}

// change reads a change chunk's contents: dependencies, actor, sequence
// number, start op, time, message, other actors, then its operations'
// columns.
func (m *measurer) change(b []byte) error {
	if err := m.addChanges(1); err != nil {
		return err
	}
	r := reader{b: b}
	if err := changeHead(&r); err != nil {
		return err
	}
	cols, err := r.columns()
	if err != nil {
		return err
	}
	for _, c := range cols {
		if c.deflated() {
			// Automerge compresses a change whole, never its columns, and
			// refuses a change with a compressed column.
			return fmt.Errorf("%w: %v of a change is compressed", ErrFormat, c)
		}
	}
	ops, err := m.columnsAt(&r, cols, true)
	if err != nil {
		return err
	}
	if extra := r.left(); extra > MaxExtraBytes {
		// Bytes after the columns are kept for formats to come; automerge
		// makes none. Uncounted, a compressed change of zeros would make
		// the server, and automerge after it, inflate megabytes that
		// describe nothing.
		return m.tooCostly("bytes after a change's columns", int64(extra), MaxExtraBytes)
	}
	return m.addOps(ops)
}

// changeHead reads a change's contents up to its columns: dependencies,
// actor, sequence number, start op, time, message, other actors.
func changeHead(r *reader) error {
	if err := r.hashes(); err != nil { // dependencies
		return err
	}
	if _, err := r.prefixed(); err != nil { // actor
		return err
	}
	for range 2 { // sequence number, start op
		if _, err := r.uleb(); err != nil {
			return err
		}
	}
	if _, err := r.sleb(); err != nil { // time
		return err
	}
	if _, err := r.prefixed(); err != nil { // message
		return err
	}
	return r.actors() // other actors
}

// MaxExtraBytes is the most bytes a change may hold after its columns
// (automerge keeps them, for formats to come, and makes none).
const MaxExtraBytes = 4 << 10

// document reads a document chunk's contents: actors, heads, the changes'
// columns, then the operations' columns.
func (m *measurer) document(b []byte) error {
	m.cost.Documents++
	r := reader{b: b}
	if err := r.actors(); err != nil {
		return err
	}
	if err := r.hashes(); err != nil { // heads
		return err
	}
	changeCols, err := r.columns()
	if err != nil {
		return err
	}
	opCols, err := r.columns()
	if err != nil {
		return err
	}
	changes, err := m.columnsAt(&r, changeCols, false)
	if err != nil {
		return err
	}
	if err := m.addChanges(changes); err != nil {
		return err
	}
	ops, err := m.columnsAt(&r, opCols, true)
	if err != nil {
		return err
	}
	return m.addOps(ops)
}

type column struct {
	spec uint64
	n    int
}

func (c column) id() uint64        { return c.spec >> 4 }
func (c column) typ() uint64       { return c.spec & 7 }
func (c column) deflated() bool    { return c.spec&colDeflateBit != 0 }
func (c column) String() string    { return fmt.Sprintf("column %d (type %d)", c.id(), c.typ()) }
func (r *reader) columnCount() int { return r.left() / 2 }

// columnsAt reads the data of cols from r and returns their row count (the
// most rows any column outside a group has). ops says they are operation
// columns: their groups count Refs and their strings and values count
// ValueBytes.
func (m *measurer) columnsAt(r *reader, cols []column, ops bool) (int64, error) {
	grouped := map[uint64]bool{}
	for _, c := range cols {
		if c.typ() == colGroup {
			grouped[c.id()] = true
		}
	}
	var rows int64
	for _, c := range cols {
		data, err := r.take(c.n)
		if err != nil {
			return 0, err
		}
		size := int64(len(data))
		if c.deflated() {
			left := max(m.lim.Bytes-m.cost.Bytes, 0)
			if size, err = m.inflatedSize(data, left); err != nil {
				return 0, err
			}
			if err := m.addBytes(size); err != nil {
				return 0, err
			}
			// Raw values are only counted: inflated to count them, they
			// are never held.
			if c.typ() != colValueRaw {
				if data, err = m.inflateInto(data, size); err != nil {
					return 0, err
				}
			}
		}
		member := grouped[c.id()] && c.typ() != colGroup
		var n, sum, str int64
		switch c.typ() {
		case colValueRaw:
			if ops {
				if err := m.addValueBytes(size); err != nil {
					return 0, err
				}
			}
			continue
		case colBool:
			n, err = boolRows(data)
		case colDelta:
			n, err = rleRows(data, sleb)
		case colString:
			n, str, err = stringRows(data)
		default: // group, actor, int, value metadata
			n, sum, err = ulebRows(data, c.typ() == colGroup)
		}
		if err != nil {
			return 0, fmt.Errorf("%w: %v: %v", ErrFormat, c, err)
		}
		if ops {
			if err := m.addValueBytes(str); err != nil {
				return 0, err
			}
			if c.typ() == colGroup {
				if err := m.addRefs(sum); err != nil {
					return 0, err
				}
			}
		}
		if !member {
			rows = max(rows, n)
			if ops && m.lim.Ops > 0 && m.cost.Ops+rows > m.lim.Ops {
				return 0, m.tooCostly("operations", m.cost.Ops+rows, m.lim.Ops)
			}
		}
	}
	return rows, nil
}

func (m *measurer) tooCostly(what string, n, limit int64) error {
	return fmt.Errorf("%w: at least %d %s, more than %d", ErrTooCostly, n, what, limit)
}

func (m *measurer) addChanges(n int64) error {
	m.cost.Changes = addSat(m.cost.Changes, n)
	if m.lim.Changes > 0 && m.cost.Changes > m.lim.Changes {
		return m.tooCostly("changes", m.cost.Changes, m.lim.Changes)
	}
	return nil
}

func (m *measurer) addOps(n int64) error {
	m.cost.Ops = addSat(m.cost.Ops, n)
	if m.lim.Ops > 0 && m.cost.Ops > m.lim.Ops {
		return m.tooCostly("operations", m.cost.Ops, m.lim.Ops)
	}
	return nil
}

func (m *measurer) addRefs(n int64) error {
	m.cost.Refs = addSat(m.cost.Refs, n)
	if m.lim.Refs > 0 && m.cost.Refs > m.lim.Refs {
		return m.tooCostly("references to earlier operations", m.cost.Refs, m.lim.Refs)
	}
	return nil
}

func (m *measurer) addValueBytes(n int64) error {
	m.cost.ValueBytes = addSat(m.cost.ValueBytes, n)
	if m.lim.ValueBytes > 0 && m.cost.ValueBytes > m.lim.ValueBytes {
		return m.tooCostly("bytes of values", m.cost.ValueBytes, m.lim.ValueBytes)
	}
	return nil
}

func (m *measurer) addBytes(n int64) error {
	m.cost.Bytes = addSat(m.cost.Bytes, n)
	if m.cost.Bytes > m.lim.Bytes {
		return m.tooCostly("bytes", m.cost.Bytes, m.lim.Bytes)
	}
	return nil
}

// inflateChange inflates a compressed change's DEFLATE data, reading no
// more than the bytes left under lim.Bytes (plus one, to tell that there
// is more). It reads the change's head first, as it inflates and holding
// none of it, for the change's size (its head and its columns' lengths):
// data that inflates to more than that and MaxExtraBytes (a few kilobytes
// of compressed zeros, say), or whose head asks for more value bytes than
// are left, is refused having held nothing; the rest is counted, then
// inflated into one slice of its size.
func (m *measurer) inflateChange(b []byte) ([]byte, error) {
	left := max(m.lim.Bytes-m.cost.Bytes, 0)
	size, values, err := m.changeSize(b, left)
	if err != nil {
		return nil, err
	}
	if m.lim.ValueBytes > 0 && addSat(m.cost.ValueBytes, values) > m.lim.ValueBytes {
		return nil, m.tooCostly("bytes of values", addSat(m.cost.ValueBytes, values), m.lim.ValueBytes)
	}
	n, err := m.inflatedSize(b, min(left, addSat(size, MaxExtraBytes)))
	if err != nil {
		return nil, err
	}
	if n-size > MaxExtraBytes {
		return nil, m.tooCostly("bytes after a change's columns", n-size, MaxExtraBytes)
	}
	if err := m.addBytes(n); err != nil {
		return nil, err
	}
	return m.inflateInto(b, n)
}

// changeSize reads the head of the change b's DEFLATE data holds (its
// contents up to its columns, and their lengths), as it inflates, no more
// than limit bytes of it, and returns the change's size and the bytes its
// raw value columns take (saturating).
func (m *measurer) changeSize(b []byte, limit int64) (size, values int64, err error) {
	in := io.LimitReader(m.deflate(b), limit)
	if m.buf == nil {
		m.buf = bufio.NewReader(in)
	} else {
		m.buf.Reset(in)
	}
	s := stream{r: m.buf}
	skip := func(n, each uint64) {
		if s.err == nil && n > math.MaxInt64/max(each, 1) {
			s.fail()
		}
		s.skip(n * each)
	}
	skip(s.uleb(), 32)                              // dependencies
	skip(s.uleb(), 1)                               // actor
	s.uleb()                                        // sequence number
	s.uleb()                                        // start op
	s.sleb()                                        // time
	skip(s.uleb(), 1)                               // message
	for n := s.uleb(); n > 0 && s.err == nil; n-- { // other actors
		skip(s.uleb(), 1)
	}
	ncols := s.uleb()
	if s.err == nil && ncols > uint64(limit/2) {
		s.fail()
	}
	for range ncols {
		if s.err != nil {
			break
		}
		c := column{spec: s.uleb()}
		l := s.uleb()
		if c.deflated() {
			s.fail() // see change
		}
		size = addSat(size, int64(min(l, math.MaxInt64)))
		if c.typ() == colValueRaw {
			values = addSat(values, int64(min(l, math.MaxInt64)))
		}
	}
	if s.err != nil {
		if s.n >= limit {
			return 0, 0, m.tooCostly("bytes", addSat(m.cost.Bytes, s.n+1), m.lim.Bytes)
		}
		return 0, 0, fmt.Errorf("%w: a compressed change's head: %v", ErrFormat, s.err)
	}
	return addSat(size, s.n), values, nil
}

// stream reads LEB128 numbers from a change's head as it inflates; the
// first error stops it (and is kept in err).
type stream struct {
	r   *bufio.Reader
	n   int64 // bytes read
	err error
}

func (s *stream) fail() {
	if s.err == nil {
		s.err = errors.New("malformed")
	}
}

func (s *stream) byte() byte {
	if s.err != nil {
		return 0
	}
	c, err := s.r.ReadByte()
	if err != nil {
		s.err = fmt.Errorf("cut off at byte %d: %v", s.n, err)
		return 0
	}
	s.n++
	return c
}

func (s *stream) uleb() uint64 {
	var v uint64
	for shift := uint(0); s.err == nil; shift += 7 {
		c := s.byte()
		if shift == 63 && c > 1 {
			s.fail()
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	return 0
}

func (s *stream) sleb() int64 {
	for shift := uint(0); s.err == nil; shift += 7 {
		if c := s.byte(); c&0x80 == 0 {
			return 0 // (its value is not needed)
		}
		if shift >= 63 {
			s.fail()
		}
	}
	return 0
}

func (s *stream) skip(n uint64) {
	if s.err != nil {
		return
	}
	k, err := s.r.Discard(int(min(n, math.MaxInt)))
	s.n += int64(k)
	if err != nil || uint64(k) != n {
		s.err = fmt.Errorf("cut off at byte %d: %d bytes claimed", s.n, n)
	}
}

// Inflate decompresses DEFLATE data that inflates to at most limit bytes;
// past it the error wraps ErrTooCostly. It inflates data twice: first
// only counting (a few kilobytes of DEFLATE can inflate to any limit), so
// that data past the limit is refused having allocated nothing, then
// into one slice of the size counted. A growing buffer allocates about
// two and a half times what it inflates, and on a server's small heap
// those allocations set off collections that every other request waits
// for; counting costs a fraction of that (decompressing is cheap beside
// allocating and faulting in the memory).
func Inflate(data []byte, limit int64) ([]byte, error) {
	var m measurer
	n, err := m.inflatedSize(data, limit)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: DEFLATE data inflating past %d bytes", ErrTooCostly, limit)
	}
	return m.inflateInto(data, n)
}

// inflatedSize is what data inflates to, counted up to limit+1.
func (m *measurer) inflatedSize(data []byte, limit int64) (int64, error) {
	n, err := io.Copy(io.Discard, io.LimitReader(m.deflate(data), limit+1))
	if err != nil {
		return 0, fmt.Errorf("%w: inflate: %v", ErrFormat, err)
	}
	return n, nil
}

// inflateInto inflates the first n bytes of data's DEFLATE stream.
func (m *measurer) inflateInto(data []byte, n int64) ([]byte, error) {
	out := make([]byte, n)
	if _, err := io.ReadFull(m.deflate(data), out); err != nil {
		return nil, fmt.Errorf("%w: inflate: %v", ErrFormat, err)
	}
	return out, nil
}

func addSat(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// mulSat multiplies two non-negative numbers, saturating.
func mulSat(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// The run-length encoding of automerge's columns: a signed count n, then
// a value repeated n times (n > 0), -n literal values (n < 0), or an
// unsigned count of nulls (n == 0).

// rleRows counts the rows of a run-length encoded column whose values
// value reads.
func rleRows(b []byte, value func(*reader) (int64, error)) (int64, error) {
	n, _, err := rle(b, value, false)
	return n, err
}

// ulebRows counts the rows of a run-length encoded column of unsigned
// integers and, if sum, adds their values up too (saturating).
func ulebRows(b []byte, sum bool) (rows, total int64, err error) {
	return rle(b, uleb, sum)
}

func rle(b []byte, value func(*reader) (int64, error), sum bool) (rows, total int64, err error) {
	r := reader{b: b}
	for !r.done() {
		n, err := r.sleb()
		if err != nil {
			return 0, 0, err
		}
		switch {
		case n > 0:
			v, err := value(&r)
			if err != nil {
				return 0, 0, err
			}
			rows = addSat(rows, n)
			if sum && v > 0 {
				total = addSat(total, mulSat(n, v))
			}
		case n < 0:
			if n == math.MinInt64 {
				return 0, 0, fmt.Errorf("literal run too long")
			}
			for range -n {
				v, err := value(&r)
				if err != nil {
					return 0, 0, err
				}
				if sum && v > 0 {
					total = addSat(total, v)
				}
			}
			rows = addSat(rows, -n)
		default:
			nulls, err := r.uleb()
			if err != nil {
				return 0, 0, err
			}
			if nulls == 0 {
				// Bytes that describe no rows (automerge writes no empty
				// run): a column of them would cost its parse, and its
				// inflating, for nothing.
				return 0, 0, errors.New("a run of no nulls")
			}
			rows = addSat(rows, clampInt64(nulls))
		}
	}
	return rows, total, nil
}

// stringRows counts the rows of a run-length encoded column of strings
// and the bytes the strings hold (a repeated one counted each time).
func stringRows(b []byte) (rows, strBytes int64, err error) {
	return rle(b, func(r *reader) (int64, error) {
		s, err := r.prefixed()
		return int64(len(s)), err
	}, true)
}

// boolRows counts the rows of a boolean column: alternating run lengths,
// false first.
func boolRows(b []byte) (int64, error) {
	r := reader{b: b}
	var rows int64
	for first := true; !r.done(); first = false {
		n, err := r.uleb()
		if err != nil {
			return 0, err
		}
		if n == 0 && !first {
			// Only the first run (of falses) may be empty: see rle.
			return 0, errors.New("an empty run after the first")
		}
		rows = addSat(rows, clampInt64(n))
	}
	return rows, nil
}

func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

func uleb(r *reader) (int64, error) {
	v, err := r.uleb()
	return clampInt64(v), err
}

func sleb(r *reader) (int64, error) { return r.sleb() }

// reader reads LEB128 numbers and byte strings from b.
type reader struct {
	b []byte
	i int
}

func (r *reader) done() bool { return r.i >= len(r.b) }
func (r *reader) left() int  { return len(r.b) - r.i }

func (r *reader) take(n int) ([]byte, error) {
	if n < 0 || n > r.left() {
		return nil, fmt.Errorf("%w: %d bytes needed at byte %d, %d remain", ErrFormat, n, r.i, r.left())
	}
	b := r.b[r.i : r.i+n]
	r.i += n
	return b, nil
}

func (r *reader) uleb() (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if r.done() {
			return 0, fmt.Errorf("%w: number cut off at byte %d", ErrFormat, r.i)
		}
		c := r.b[r.i]
		r.i++
		if shift == 63 && c > 1 {
			return 0, fmt.Errorf("%w: number too large at byte %d", ErrFormat, r.i)
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
}

func (r *reader) sleb() (int64, error) {
	var v int64
	var shift uint
	for {
		if r.done() {
			return 0, fmt.Errorf("%w: number cut off at byte %d", ErrFormat, r.i)
		}
		c := r.b[r.i]
		r.i++
		if shift == 63 && c != 0 && c != 0x7f {
			return 0, fmt.Errorf("%w: number too large at byte %d", ErrFormat, r.i)
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, nil
		}
		if shift > 63 {
			return 0, fmt.Errorf("%w: number too large at byte %d", ErrFormat, r.i)
		}
	}
}

// prefixed reads a length-prefixed byte string.
func (r *reader) prefixed() ([]byte, error) {
	n, err := r.uleb()
	if err != nil {
		return nil, err
	}
	if n > uint64(r.left()) {
		return nil, fmt.Errorf("%w: %d bytes claimed at byte %d, %d remain", ErrFormat, n, r.i, r.left())
	}
	return r.take(int(n))
}

// hashes reads a count of 32-byte hashes and skips them.
func (r *reader) hashes() error {
	n, err := r.uleb()
	if err != nil {
		return err
	}
	if n > uint64(r.left()/32) {
		return fmt.Errorf("%w: %d hashes claimed at byte %d, %d bytes remain", ErrFormat, n, r.i, r.left())
	}
	_, err = r.take(int(n) * 32)
	return err
}

// actors reads a count of length-prefixed actor ids and skips them.
func (r *reader) actors() error {
	n, err := r.uleb()
	if err != nil {
		return err
	}
	if n > uint64(r.left()) {
		return fmt.Errorf("%w: %d actors claimed at byte %d, %d bytes remain", ErrFormat, n, r.i, r.left())
	}
	for range n {
		if _, err := r.prefixed(); err != nil {
			return err
		}
	}
	return nil
}

// columns reads column metadata: a count, then (spec, length) pairs.
func (r *reader) columns() ([]column, error) {
	n, err := r.uleb()
	if err != nil {
		return nil, err
	}
	if n > uint64(r.columnCount()) {
		return nil, fmt.Errorf("%w: %d columns claimed at byte %d, %d bytes remain", ErrFormat, n, r.i, r.left())
	}
	cols := make([]column, 0, n)
	total := 0
	for range n {
		spec, err := r.uleb()
		if err != nil {
			return nil, err
		}
		l, err := r.uleb()
		if err != nil {
			return nil, err
		}
		if l > uint64(len(r.b)) {
			return nil, fmt.Errorf("%w: column of %d bytes claimed at byte %d", ErrFormat, l, r.i)
		}
		total += int(l)
		cols = append(cols, column{spec: spec, n: int(l)})
	}
	if total > len(r.b) {
		return nil, fmt.Errorf("%w: columns of %d bytes claimed, the chunk has %d", ErrFormat, total, len(r.b))
	}
	return cols, nil
}
