package searchindex

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/search"
)

// Stored partitions. A partial cache's load of an owner's archival entries
// or messages reads and analyzes every row (about 7 µs of CPU a row); the
// result does not depend on the process. So once a process has loaded a
// partition it writes it, encoded, to search_text_parts with the log
// position it is current at, and another process's first search of that
// owner decodes it and replays the log entries since (the owner's rows
// among them read again) instead of reading every row. The table is a
// cache: a part that is missing, of another format or analyzer, corrupt,
// behind a trimmed log or too far behind is ignored and the rows are read.
// A change to a row's words deletes its owner's part in the same
// transaction (the tables' triggers), so deleted text does not outlive
// its row there; a save checks, in its transaction, that none of the
// owner's rows changed since the part's position.

// partFormat numbers the encoding; a part of another is ignored.
const partFormat = 6

// partMagic opens every encoded part.
const partMagic = "etp"

// errPartUnusable is why a stored part is not used: wrong format or
// analyzer, truncated or corrupt.
var errPartUnusable = errors.New("stored text partition unusable")

// partProbe is analyzed to fingerprint the analyzer: a change to how text
// is tokenized, folded or stemmed changes what a part holds, and such a
// part must not be decoded as current.
const partProbe = "Running runners ran quickly: Café naïve résumé, x86_64 e-mail don't " +
	"2024-05-01 ΑΒΓ 東京 MIXEDcase snake_case camelCase über-cool 3.14 #tag @who"

// partFingerprint is what a stored part of kind t must have been analyzed
// with: the encoding, the kind, its column weights, whether bodies are held
// and archival conversations keyed by jsonb, and the analyzer's terms of
// partProbe.
func partFingerprint(t search.ContentType, jsonb, bodies bool) uint64 {
	h := fnv.New64a()
	var b []byte
	b = binary.AppendUvarint(b, partFormat)
	b = binary.AppendUvarint(b, uint64(t))
	for _, w := range textWeights[t] {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w))
	}
	b = append(b, boolByte(jsonb), boolByte(bodies))
	h.Write(b)
	analyzer.Analyze(partProbe, nil, func(term []byte) {
		h.Write(term)
		h.Write([]byte{0})
	})
	return h.Sum64()
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// encodePart encodes p's live rows as of log position pos, with fingerprint
// fp: a header with the counts, the string section (every string's bytes,
// in the order the rest names them), the terms (each name's length, its
// count of postings and their size in bytes), the rows, the postings term
// by term, and a CRC-32 of it all. The terms no live row holds are left
// out and the others numbered densely in their names' order (a decoded
// part finds a term by binary search until its first change: termID); the
// live rows are numbered densely in slot order. The postings are stored
// term by term, each term's at the offset the sizes before it add up to,
// so that a decoded part keeps them as stored and decodes a term's when a
// search reads it (packedTerms); placed in their rows' lists term by
// term, the ids of a row ascend, as they do in a part built from the
// rows.
func encodePart(p *textPart, pos logPos, fp uint64) []byte {
	var order []int32 // the live terms' ids, by name
	for id := range int32(p.termCount()) {
		if p.name(id) != "" && p.df[id] > 0 {
			order = append(order, id)
		}
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(p.name(a), p.name(b)) })
	remap := make([]int32, p.termCount())
	for id := range remap {
		remap[id] = -1
	}
	n := len(order)
	for r, id := range order {
		remap[id] = int32(r)
	}
	// The live slots numbered densely, and each one's count of terms.
	dense := make([]int32, len(p.docs))
	next := int32(0)
	for slot := range p.docs {
		dense[slot] = -1
		if !p.docs[slot].dead {
			dense[slot] = next
			next++
		}
	}
	rowTerms := make([]int, len(p.docs))
	counts, sizes := make([]int, n), make([]int, n)
	entries := 0
	var pb []byte     // the postings, term by term
	var buf []posting // a packed part's lists, decoded in turn
	for r, id := range order {
		prev := int32(-1)
		at := len(pb)
		for _, ps := range p.scanList(id, &buf) {
			if p.docs[ps.slot].dead {
				continue
			}
			d := dense[ps.slot]
			pb = binary.AppendUvarint(pb, uint64(d-prev))
			prev = d
			pb = appendFreq(pb, ps.freq)
			rowTerms[ps.slot]++
			counts[r]++
			entries++
		}
		sizes[r] = len(pb) - at
	}
	// A term whose list read as empty (a stored list that did not decode,
	// its df still counted while its part stays packed) is left out.
	if slices.Contains(counts, 0) {
		keep := 0
		for r, id := range order {
			if counts[r] == 0 {
				remap[id] = -1
				continue
			}
			order[keep], counts[keep], sizes[keep] = id, counts[r], sizes[r]
			remap[id] = int32(keep)
			keep++
		}
		order, counts, sizes, n = order[:keep], counts[:keep], sizes[:keep], keep
	}
	var strs, rb, tb []byte
	for _, id := range order {
		strs = append(strs, p.name(id)...)
	}
	toksLen := 0 // the packed term ids' bytes, all bodies': one slab decoded
	for slot := range p.docs {
		d := &p.docs[slot]
		if d.dead {
			continue
		}
		rb = binary.AppendVarint(rb, d.id)
		rb = binary.AppendVarint(rb, d.created)
		rb = binary.AppendUvarint(rb, uint64(d.length))
		rb = append(rb, boolByte(d.superseded))
		rb = binary.AppendUvarint(rb, uint64(rowTerms[slot]))
		if p.bodies == nil {
			continue
		}
		body := &p.bodies[slot]
		for _, s := range []string{body.content, body.tags, body.meta, body.sess} {
			rb = binary.AppendUvarint(rb, uint64(len(s)))
			strs = append(strs, s...)
		}
		rb = append(rb, body.sessOf)
		tb = tb[:0]
		ok := body.toks != nil
		for rest := body.toks; ok && len(rest) > 0; {
			var id uint32
			id, rest, ok = nextTok(rest)
			// An id no live term has (a part decoded from bytes that
			// named another row's term) is written as no ids: the
			// snippet tokenizes the text instead.
			ok = ok && int(id) < len(remap) && remap[id] >= 0
			if ok {
				tb = binary.AppendUvarint(tb, uint64(remap[id]))
			}
		}
		if !ok {
			rb = append(rb, 0)
			continue
		}
		rb = append(rb, 1)
		rb = binary.AppendUvarint(rb, uint64(len(tb)))
		rb = append(rb, tb...)
		toksLen += len(tb)
	}
	b := append([]byte(partMagic), partFormat)
	b = binary.LittleEndian.AppendUint64(b, fp)
	b = binary.AppendVarint(b, pos.xmin)
	b = binary.AppendVarint(b, pos.xmax)
	b = binary.AppendUvarint(b, uint64(len(pos.xip)))
	for _, x := range pos.xip {
		b = binary.AppendVarint(b, x)
	}
	b = append(b, boolByte(p.bodies != nil))
	b = binary.AppendUvarint(b, uint64(n))
	b = binary.AppendUvarint(b, uint64(next))
	b = binary.AppendUvarint(b, uint64(entries))
	b = binary.AppendUvarint(b, uint64(toksLen))
	b = binary.AppendUvarint(b, uint64(len(strs)))
	b = append(b, strs...)
	for r, id := range order {
		b = binary.AppendUvarint(b, uint64(len(p.name(id))))
		b = binary.AppendUvarint(b, uint64(counts[r]))
		b = binary.AppendUvarint(b, uint64(sizes[r]))
	}
	b = append(b, rb...)
	b = append(b, pb...)
	return encodeChecksum(b)
}

// encodeChecksum appends b's CRC-32 to b.
func encodeChecksum(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// appendFreq appends a posting's frequency: a column-weighted count,
// nearly always a multiple of a quarter (the weights are), written as the
// number of quarters; any other as 0 and its bits.
func appendFreq(b []byte, f float32) []byte {
	if q := f * 4; q >= 1 && q < 1<<24 && q == float32(uint32(q)) {
		return binary.AppendUvarint(b, uint64(q))
	}
	b = append(b, 0)
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
}

// readFreq reads what appendFreq wrote at the start of b, and the rest
// of b: a positive, finite number (a NaN or infinity would poison every
// score the term adds to); ok is false when b does not start with one.
func readFreq(b []byte) (f float32, rest []byte, ok bool) {
	if len(b) > 0 && b[0] != 0 && b[0] < 0x80 { // most are one byte
		return float32(b[0]) / 4, b[1:], true
	}
	q, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, false
	}
	if b = b[n:]; q != 0 {
		return float32(q) / 4, b, true
	}
	if len(b) < 4 {
		return 0, nil, false
	}
	f = math.Float32frombits(binary.LittleEndian.Uint32(b))
	if !(f > 0) || math.IsInf(float64(f), 0) {
		return 0, nil, false
	}
	return f, b[4:], true
}

// partDecoder reads an encoded part: the structure from b, the strings
// from strs in turn. A read past either end sets err.
type partDecoder struct {
	b    []byte
	strs string
	err  error
}

func (r *partDecoder) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated or corrupt", errPartUnusable)
	}
}

func (r *partDecoder) uvarint() uint64 {
	if len(r.b) > 0 && r.b[0] < 0x80 { // most are one byte
		v := r.b[0]
		r.b = r.b[1:]
		return uint64(v)
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint reads a zig-zag varint (binary.AppendVarint's).
func (r *partDecoder) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *partDecoder) byte() byte {
	if len(r.b) < 1 {
		r.fail()
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// count reads a count of items that each take at least min bytes of what
// is left (a corrupt count must not make a huge allocation).
func (r *partDecoder) count(min int) int {
	v := r.uvarint()
	if v > uint64(len(r.b)/max(min, 1)) {
		r.fail()
		return 0
	}
	return int(v)
}

func (r *partDecoder) str() string {
	n := r.uvarint()
	if n > uint64(len(r.strs)) {
		r.fail()
		r.strs = ""
		return ""
	}
	s := r.strs[:n]
	r.strs = r.strs[n:]
	return s
}

// decodePart decodes a part encoded by encodePart for owner's rows of kind
// t into a new textPart, checking its fingerprint against fp; it returns
// the part and its log position. The part keeps nothing of data (a
// driver's buffer that is reused once its row closes: readStoredRows).
func decodePart(data []byte, t search.ContentType, owner string, fp uint64, jsonb bool) (*textPart, logPos, error) {
	var pos logPos
	head := len(partMagic) + 1 + 8
	if len(data) < head+4 || string(data[:len(partMagic)]) != partMagic || data[len(partMagic)] != partFormat {
		return nil, pos, fmt.Errorf("%w: not of format %d", errPartUnusable, partFormat)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, pos, fmt.Errorf("%w: checksum", errPartUnusable)
	}
	if binary.LittleEndian.Uint64(data[len(partMagic)+1:]) != fp {
		return nil, pos, fmt.Errorf("%w: analyzed otherwise", errPartUnusable)
	}
	r := &partDecoder{b: body[head:]}
	pos.xmin, pos.xmax = r.varint(), r.varint()
	if nx := r.count(1); nx > 0 {
		pos.xip = make([]int64, nx)
		for i := range pos.xip {
			pos.xip[i] = r.varint()
		}
		if !slices.IsSorted(pos.xip) {
			r.fail()
		}
	}
	bodies := r.byte() == 1
	if bodies != textBodies[t] {
		r.fail()
	}
	nterms, ndocs, entries, toksLen := r.count(3), r.count(5), r.count(2), r.count(1)
	nstr := r.count(1)
	// Together, not each alone: what the counts make room for must fit
	// the bytes left (each term's name takes a byte of the strings and
	// three of the directory, each row five, each posting two, each packed
	// id one), so that no input allocates much more than its size.
	if r.err == nil && (nterms > nstr || 3*nterms+5*ndocs+2*entries+toksLen > len(r.b)-nstr) {
		r.fail()
	}
	if r.err != nil {
		return nil, pos, r.err
	}
	r.strs, r.b = string(r.b[:nstr]), r.b[nstr:] // the strings' one allocation
	// Every slice and map at its size; the terms packed (names as windows
	// of one string, postings as stored: packedTerms) until the first
	// change.
	k := &packedTerms{names: r.strs, nameEnd: make([]uint32, nterms), rawEnd: make([]uint32, nterms), count: make([]int32, nterms), entries: int64(entries)}
	p := &textPart{weights: textWeights[t], t: t, jsonb: jsonb,
		slots:  make(map[int64]int32, ndocs), // post: built at the first change (indexTerms)
		owners: map[string]*textOwner{}, docs: make([]textDoc, 0, ndocs),
		packed: k, df: make([]int32, nterms)}
	if bodies {
		p.bodies = make([]textBody, 0, ndocs)
	}
	// The terms: each name, its count of postings (df, as every row
	// decoded is live) and their size (each posting takes two bytes or
	// more).
	total, prev, size := 0, "", uint64(0)
	for id := range nterms {
		var n, count, nb uint64
		if b := r.b; len(b) >= 3 && b[0]|b[1]|b[2] < 0x80 { // most terms: three one-byte varints
			n, count, nb, r.b = uint64(b[0]), uint64(b[1]), uint64(b[2]), b[3:]
		} else {
			n, count, nb = r.uvarint(), r.uvarint(), r.uvarint()
		}
		total += int(min(count, uint64(entries)+1))
		if n > uint64(len(r.strs)) || count == 0 || count > uint64(ndocs) || total > entries || nb < 2*count || nb > uint64(len(r.b))-size {
			r.fail() // past the strings, a term no row holds or more than there are rows, more postings than the header gave, too few bytes for them or more than are left
			break
		}
		size += nb
		name := r.strs[:n]
		r.strs = r.strs[n:]
		if name == "" || id > 0 && name <= prev {
			r.fail() // the names ascend, each once
			break
		}
		p.bytes += textCostPacked + int64(len(name))
		k.nameEnd[id], p.df[id], prev = uint32(len(k.names)-len(r.strs)), int32(count), name
		k.rawEnd[id], k.count[id] = uint32(size), int32(count)
	}
	if r.err == nil && total != entries {
		r.fail()
	}
	if r.err != nil {
		return nil, pos, r.err
	}
	k.names = k.names[:len(k.names)-len(r.strs)] // (the bodies' strings follow)
	// The bodies' term ids, packed as stored, in one slab of the size the
	// header gives: filled by appends within its capacity, so that each
	// body's window of it stays put (an empty one is empty, not nil).
	tokSlab := make([]byte, 0, toksLen)
	termsAt := 0 // each row's window of terms, filled at the first remove or change (fillTerms)
	for range ndocs {
		if r.err != nil {
			break
		}
		d := textDoc{id: r.varint(), owner: owner, created: r.varint()}
		length := r.uvarint()
		d.superseded = r.byte() == 1
		n := r.count(2) // each of its postings takes two bytes or more
		if _, dup := p.slots[d.id]; dup || length > math.MaxInt32 || termsAt+n > entries {
			r.fail()
			break
		}
		d.length = int32(length)
		d.termsAt, d.nTerms = int32(termsAt), int32(n)
		termsAt += n
		p.appendDoc(d)
		if !bodies {
			continue
		}
		body := textBody{content: r.str(), tags: r.str(), meta: r.str(), sess: r.str(), sessOf: r.byte()}
		if r.byte() == 1 {
			// Kept as they are, not checked: their readers take any
			// bytes (snippetOfTokens shows no snippet of ids it cannot
			// read or that do not fit the text, and an encode writes a
			// row whose ids name no live term with none).
			n := r.count(1)
			toks := r.b[:n]
			r.b = r.b[n:]
			if len(tokSlab)+n > toksLen {
				r.fail() // more than the header gave
				break
			}
			at := len(tokSlab)
			tokSlab = append(tokSlab, toks...)
			body.toks = tokSlab[at:len(tokSlab):len(tokSlab)]
		}
		p.bodies = append(p.bodies, body)
		p.bodyBytes += body.cost()
	}
	if len(tokSlab) != toksLen || termsAt != entries {
		r.fail()
	}
	if r.err != nil {
		return nil, pos, r.err
	}
	// The postings, kept as stored: what is left, to the byte.
	if uint64(len(r.b)) != size || len(r.strs) != 0 {
		return nil, pos, fmt.Errorf("%w: bytes left over", errPartUnusable)
	}
	k.raw = bytes.Clone(r.b)
	p.bytes += p.packedPostingsCost()
	return p, pos, nil
}

// TextPartLocker is a Dialect that can make a save of a stored partition
// (a row of search_text_parts) see every write that would drop it (a
// delete of one of its owner's rows, a change to one's words or owner).
// TryLockTextPart tries, without waiting, the lock of owner's part of kind
// in the write transaction ex and reports whether it got it. Where writers
// run side by side (PostgreSQL) the triggers that drop a part take that
// lock (of the kind and a bucket of owners) shared first: held, a save's
// check sees every such write committed, and a later one waits for the
// save's commit and then drops the part; not held, such a write is in
// flight and the part is not saved. Where a write transaction holds the
// whole database (SQLite) it is always had. A dialect without it saves no
// partition.
type TextPartLocker interface {
	TryLockTextPart(ctx context.Context, ex driver.Execer, kind int, owner string) (bool, error)
}

// errPartBusy is why a save wrote nothing: a write that drops the part
// was in flight (TextPartLocker).
var errPartBusy = errors.New("stored text partition: a write that drops it is in flight")

// errPartChanged is why a load gave up: the stored part it waited for
// the bound to read was saved anew or dropped meanwhile (readStored).
var errPartChanged = errors.New("stored text partition: changed while its load waited for the bound")

// SchemaVersioner is a Dialect that reads its database's schema version:
// a stored partition saved under another is not used (a migration may
// change what a row is indexed with: its neighbours, its date words).
// SchemaVersionQuery returns one row of one integer.
type SchemaVersioner interface {
	SchemaVersionQuery() string
}

// PerRunPlanner is a Dialect that reports whether its engine plans a
// prepared statement at each run, with the values it is given (SQLite):
// then a statement naming a change-log position, whose plan depends on
// the position, is prepared once per Index (parsing it cost SQLite more
// than running it). An engine that keeps a generic plan once a statement
// has run a few times (PostgreSQL) could keep one that reads the whole
// log; there such statements are not prepared, as on a dialect without
// PerRunPlanner.
type PerRunPlanner interface {
	PlansEachRun() bool
}

// partSaves are a cache's saves of stored partitions in flight, guarded
// by mu.
type partSaves struct {
	mu      sync.Mutex
	running map[partKey]bool
	closed  bool
	wg      sync.WaitGroup
	// write runs fn in a write transaction (Index.withWriteLock) that
	// holds what a save of owner's part of kind t must (TextPartLocker);
	// nil: no partition is saved.
	write func(ctx context.Context, t search.ContentType, owner string, fn func(ctx context.Context, ex driver.Execer) error) error
	// fps are the kinds' fingerprints, computed on first use.
	fpOnce sync.Once
	fps    map[search.ContentType]uint64
	// schema is the database's schema version (SQLite's user_version):
	// a migration may change what a row is indexed with (its neighbours,
	// its date words), so a part saved under another is not used.
	schema int64
	// off turns reading and saving parts off (no table, or a dialect
	// that cannot make a save see the writes beside it).
	off bool
	// For tests: saved counts the saves written, stored the loads that
	// used a stored part, skipped the saves not written; readOff turns
	// reading parts off; beforeWrite runs in a save between its encoding
	// and its write, inWrite in its write transaction, its locks held
	// and its check passed, before its insert.
	saved, stored, skipped atomic.Int64
	busy                   atomic.Int64 // tries that found the part's lock busy
	atOnce                 atomic.Int64 // stored parts caught up in their load's one statement (readStored)
	changed                atomic.Int64 // loads given up: the part changed while they waited (errPartChanged)
	rereads                atomic.Int64 // parts read again once they fit (rereadPart)
	readOff                bool
	beforeWrite, inWrite   func()
}

// fingerprint is kind t's partFingerprint in cache c.
func (c *textCache) fingerprint(t search.ContentType) uint64 {
	c.saves.fpOnce.Do(func() {
		c.saves.fps = map[search.ContentType]uint64{}
		for _, k := range []search.ContentType{search.Blocks, search.Archival, search.Messages} {
			c.saves.fps[k] = partFingerprint(k, c.jsonbKeys, textBodies[k]) ^ uint64(c.saves.schema)*0x9e3779b97f4a7c15
		}
	})
	return c.saves.fps[t]
}

// storedReplayMax is how many rows logged past a stored part's position
// (any owner's) a load replays before it reads the rows instead: about
// twice what reading the rows costs in the log's scan. A save stores it
// beside the part (replay_max), for the statement that reads both.
func storedReplayMax(live int) int { return 64 + 2*live }

// storedReplayEntries is how many log entries a row logged since a
// stored part may take, for the statement that reads them (a row's
// write logs its neighbours too: about three entries an append): past
// replay_max times as many, the replay is left to replayStored, which
// counts rows.
const storedReplayEntries = 4

// partInPlaceMax is the largest part decoded from the driver's buffer,
// with the statement's connection held: a larger one is copied first (a
// decode takes about a millisecond a megabyte; a copy a tenth of that).
const partInPlaceMax = 256 << 10

// readStored reads owner's stored partition of kind t and replays onto it
// the log entries since its position; nil when there is none to use (the
// rows are read instead). replayed is how many entries it replayed. base
// is the cache's position when the load began (catchUpLoad's).
//
// One statement (storedQuery) reads the part, the log's bounds, the
// entries since the part's position with their rows' owners now, and the
// rows logged since base (ld.moved, for catchUpLoad): a statement reads
// one snapshot, so where no entry since is of a row owner's now, that
// statement is the whole load; where one is, or there were more entries
// than the statement reads, the replay is done again in the log's
// snapshot (replayStored).
//
// A part up to partInPlaceMax is decoded from the driver's buffer while
// its row is open (decodePart keeps nothing of its input), which spares a
// copy of it, when the decode's reservation is had at once; a bigger one
// is copied, the copy reserved with it, and decoded once the statement is
// done. A part whose reservation is not had at once is not kept: the load
// reads it again once it fits (rereadPart), so a load waiting for the
// bound holds no copy of its part. It never waits for a connection
// holding a reservation: readPart waits for the bound in its snapshot's
// transaction, and in a pool of one (an in-memory store's) the two would
// wait on each other for ever. Should the part have been saved anew or
// dropped meanwhile, the load gives up (errPartChanged): its statement's
// snapshot, taken before the wait, is the only one it may install at (a
// snapshot taken after could be past a write the cache's catch-ups have
// yet to apply), and the search answers that type in SQL.
func (c *textCache) readStored(ctx context.Context, db *sql.DB, t search.ContentType, owner string, base logPos) (ld *partRead, replayed int, err error) {
	if c.saves.off || c.saves.readOff {
		return nil, 0, nil
	}
	k := kinds[t]
	r, err := c.readStoredRows(ctx, db, t, owner, base)
	if err != nil || r == nil {
		return nil, 0, err
	}
	if r.copied != nil {
		c.decodeStored(r, r.copied, t, owner)
		c.release(r.held)
		r.copied = nil
	}
	if r.later {
		same, err := c.rereadPart(ctx, db, t, owner, r)
		if err != nil {
			return nil, 0, err
		}
		if !same {
			c.saves.changed.Add(1)
			return nil, 0, errPartChanged
		}
	}
	if r.decodeErr != nil {
		c.ld.log.Debug("search: text cache: stored partition not used", "kind", k.name, "owner", owner, "err", r.decodeErr)
		return nil, 0, nil
	}
	// The entries read are those from the part's pos column on, which a
	// save writes with the part: the lowest position of an entry it may
	// lack (its position's xmax, or the first transaction running at it).
	// Of them, those the part's position holds (committed before it,
	// beside a transaction running then) are passed over here; of the
	// rest, an entry of a row that is not owner's now takes the row out of
	// the part, and one of a row that is owner's now has the replay done
	// in a snapshot (replayStored), as has an arm cut short by its limit.
	ld = &partRead{p: r.p, pos: r.pos}
	maxCap := int64(storedReplayMax(partSaveRowsMax))
	if !r.col.Valid || r.col.Int64 != r.pos.lowest() || !r.colMax.Valid || r.colMax.Int64 < 0 || r.colMax.Int64 > maxCap {
		return nil, 0, nil // not the part's own columns
	}
	var ids []int64
	seen := map[int64]bool{}
	owners := false
	for _, e := range r.entries {
		switch {
		case r.pos.holds(e.at):
		case e.owners:
			owners = true
		case !seen[e.id]: // (an entry of each change to a row)
			seen[e.id] = true
			ids = append(ids, e.id)
		}
	}
	switch {
	case r.pos.trimmed(r.floor) || len(ids) > storedReplayMax(r.p.live):
		return nil, 0, nil // the log lost entries since, or more rows were logged since than a replay is worth
	case owners || int64(len(r.entries)) > storedReplayEntries*r.colMax.Int64:
		// A row of owner's logged since, or more entries than the
		// statement read.
		n, ok, err := c.replayStored(ctx, db, t, owner, ld)
		if err != nil || !ok {
			return nil, 0, err
		}
		c.saves.stored.Add(1)
		return ld, n, nil
	}
	for _, id := range ids {
		ld.p.remove(id)
	}
	ld.pos = later(ld.pos, r.cur)
	ld.moved = r.moved
	c.saves.atOnce.Add(1)
	c.saves.stored.Add(1)
	return ld, len(ids), nil
}

// storedRead is what readStored's statement read.
type storedRead struct {
	p           *textPart // decoded (nil when copied)
	pos, cur    logPos    // the part's, and the log's bounds
	floor       int64
	decodeErr   error
	copied      []byte // a big part, to decode once the statement is done
	held        int64  // its reservation (the copy's with its decode's)
	later       bool   // the part is to be read again once it fits (rereadPart)
	size        int64  // the part's size
	col, colMax sql.NullInt64
	entries     []storedEntry // the log's since the part's pos column
	moved       map[int64]bool
}

// storedEntry is an entry of the log read with a stored part.
type storedEntry struct {
	id, at int64 // the row's id, the entry's position
	owners bool  // the row is the part owner's now
}

// readStoredRows runs readStored's statement; nil when there is no part
// to use. Its rows are closed, and nothing of the driver's kept, when it
// returns.
func (c *textCache) readStoredRows(ctx context.Context, db *sql.DB, t search.ContentType, owner string, base logPos) (_ *storedRead, err error) {
	k := kinds[t]
	r := &storedRead{moved: map[int64]bool{}}
	defer func() {
		if err != nil && r.held > 0 {
			c.release(r.held) // (a big part's, reserved with its row open: the statement failed after it)
		}
	}()
	q, args := c.storedQuery(k, owner, base)
	var src queryer = db
	if c.prepPositions {
		if st := c.prepare(ctx, q); st != nil {
			src = stmtQueryer{st}
		}
	}
	rows, err := src.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search: text cache: read stored %s of %q: %w", k.name, owner, err)
	}
	defer rows.Close()
	found, bounds := false, false
	for rows.Next() {
		var from int
		var a, b, fl, id sql.NullInt64
		var xip, o sql.NullString
		var raw sql.RawBytes
		if err := rows.Scan(&from, &a, &b, &xip, &fl, &id, &o, &raw); err != nil {
			return nil, fmt.Errorf("search: text cache: read stored %s of %q: %w", k.name, owner, err)
		}
		switch from {
		case 0: // the bounds
			xs, err := parseXip(xip.String)
			if err != nil {
				return nil, fmt.Errorf("search: text cache: read log of %s: %w", k.name, err)
			}
			r.cur, r.floor, bounds = logPos{xmin: a.Int64, xmax: b.Int64, xip: xs}, fl.Int64, true
		case 1: // the part (no bytes when twice their size passes the bound)
			found, r.col, r.colMax = true, a, b
			if raw == nil {
				return nil, nil
			}
			r.size = int64(len(raw))
			need := partReservation(r.size)
			switch {
			case !c.tryReserve(need):
				r.later = true
			case r.size > partInPlaceMax:
				r.copied, r.held = bytes.Clone(raw), need
			default:
				c.decodeStored(r, raw, t, owner)
				c.release(need)
			}
		case 2: // an entry since the part (a: its position)
			r.entries = append(r.entries, storedEntry{id: id.Int64, at: a.Int64, owners: o.Valid && o.String == owner})
		case 3: // a row logged since base
			r.moved[id.Int64] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: text cache: read stored %s of %q: %w", k.name, owner, err)
	}
	if !found {
		return nil, nil
	}
	if !bounds {
		return nil, fmt.Errorf("search: text cache: read log of %s: no bounds", k.name)
	}
	return r, nil
}

// decodeStored decodes data, owner's part of kind t, into r.
func (c *textCache) decodeStored(r *storedRead, data []byte, t search.ContentType, owner string) {
	r.p, r.pos, r.decodeErr = decodePart(data, t, owner, c.fingerprint(t), c.jsonbKeys)
}

// partReservation is what a part of size bytes reserves of the bound:
// its decode's, and the part's copy when it is too big to be decoded
// from the driver's buffer (partInPlaceMax).
func partReservation(size int64) int64 {
	if size > partInPlaceMax {
		return 3 * size
	}
	return 2 * size
}

// storedPartMax is the biggest part whose reservation (partReservation)
// fits a bound of limit bytes: a bigger one is not read (its owner's
// rows are, and refused when too many).
func storedPartMax(limit int64) int64 {
	if limit/3 > partInPlaceMax {
		return limit / 3
	}
	return min(partInPlaceMax, limit/2)
}

// rereadTries is how many times rereadPart reads a part that then does
// not fit (other loads took the bound between its wait and its read)
// before it copies the part and waits for the bound with the copy.
const rereadTries = 4

// rereadPart reads owner's part of kind t again for a load whose
// statement (readStoredRows) left it (r.later), and decodes it into r. It
// waits, holding nothing, until the part's reservation would fit, then
// reads the part and, while its row is open, tries to reserve: had, the
// part is decoded (from the driver's buffer, or copied when too big);
// not had (another load came first), the row is closed and the wait
// starts again, rereadTries times in all; then the part is copied and the
// reservation waited for with the copy and no connection.
//
// same is false, with nothing decoded, when the part is not the one the
// statement saw: its position columns or size differ (saved anew since,
// or gone), or it holds a position the statement's snapshot does not (a
// part saved since, at another position with the same columns: on
// PostgreSQL the pos column is the first transaction running at the
// part's position, which many positions share). The entries and rows
// the statement read describe the log up to its snapshot, from the
// part's pos column on: a part at a later position would not fit them.
func (c *textCache) rereadPart(ctx context.Context, db *sql.DB, t search.ContentType, owner string, r *storedRead) (same bool, err error) {
	k := kinds[t]
	need := partReservation(r.size)
	for try := 1; ; try++ {
		if err := c.waitFits(ctx, need); err != nil {
			return false, fmt.Errorf("search: text cache: wait to load %s of %q: %w", k.name, owner, err)
		}
		done, same, err := c.rereadOnce(ctx, db, t, owner, r, need, try == rereadTries)
		if err != nil {
			return false, fmt.Errorf("search: text cache: read stored %s of %q: %w", k.name, owner, err)
		}
		if done {
			if same && r.decodeErr == nil && !r.cur.covers(r.pos) {
				r.p, same = nil, false // saved at a position past the statement's
			}
			return same, nil
		}
	}
}

// rereadOnce is one of rereadPart's reads: done is false, with nothing
// decoded or held, when the part's reservation was not had while its row
// was open (and last is false).
func (c *textCache) rereadOnce(ctx context.Context, db *sql.DB, t search.ContentType, owner string, r *storedRead, need int64, last bool) (done, same bool, err error) {
	// The part's bytes only when of the size the statement saw: a part
	// saved anew bigger is not read.
	const q = `SELECT CAST(pos AS BIGINT), CAST(replay_max AS BIGINT), CASE WHEN CAST(length(data) AS BIGINT) = ? THEN data END FROM search_text_parts WHERE kind = ? AND owner = ?`
	var src queryer = db
	if st := c.prepare(ctx, q); st != nil {
		src = stmtQueryer{st}
	}
	c.saves.rereads.Add(1)
	var copied []byte
	reserved := false
	err = func() error {
		rows, err := src.QueryContext(ctx, q, r.size, int(t), owner)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			done = true // gone
			return rows.Err()
		}
		var pos, max sql.NullInt64
		var raw sql.RawBytes
		if err := rows.Scan(&pos, &max, &raw); err != nil {
			return err
		}
		if pos != r.col || max != r.colMax || raw == nil {
			done = true
			return nil
		}
		reserved = c.tryReserve(need)
		switch {
		case !reserved && !last:
			return nil
		case !reserved || r.size > partInPlaceMax:
			copied = bytes.Clone(raw)
		default:
			c.decodeStored(r, raw, t, owner)
		}
		done, same = true, true
		return nil
	}()
	if err != nil || !done {
		if reserved {
			c.release(need)
		}
		return false, false, err
	}
	if copied != nil && !reserved {
		if err := c.reserve(ctx, need); err != nil {
			return false, false, err
		}
		reserved = true
	}
	if reserved {
		defer c.release(need)
	}
	if copied != nil {
		c.decodeStored(r, copied, t, owner)
	}
	return done, same, nil
}

// storedQuery is readStored's statement: the log's bounds (src 0), owner's
// part of kind k with its pos and replay_max columns (src 1; its bytes
// only when their reservation fits the bound: storedPartMax, its first
// parameter), the log's entries of kind k from pos on in order, each with
// its position and its row's owner now (at most storedReplayEntries ×
// replay_max + 1, replay_max taken as 0 past any part's cap; src 2), and
// the rows of kind k logged since base (src 3). One compound statement, each arm one
// lookup or a range of the log, with no join across arms or DISTINCT (on
// SQLite each of those made a temporary b-tree on every load). The
// part's arm comes first: it types every column, as PostgreSQL's
// resolution of a compound's NULLs wants (the rows may come in any
// order), and casts its columns, which SQLite keeps of any type. Its
// entries are read in order (the log's index, whatever the position: the
// server plans it knowing none), each owner by its row's key.
func (c *textCache) storedQuery(k *kind, owner string, base logPos) (string, []any) {
	bw, bargs := c.log.since(base)
	const part = `FROM search_text_parts WHERE kind = ? AND owner = ?`
	q := `SELECT 1 AS src, CAST(pos AS BIGINT) AS xmin, CAST(replay_max AS BIGINT) AS xmax, CAST(NULL AS TEXT) AS xip,` +
		` CAST(NULL AS BIGINT) AS floor, CAST(NULL AS BIGINT) AS id, CAST(NULL AS TEXT) AS owner,` +
		` CASE WHEN CAST(length(data) AS BIGINT) <= ? THEN data END AS data ` + part +
		` UNION ALL SELECT 0, b.xmin, b.xmax, b.xip, b.floor, NULL, NULL, NULL FROM (` + c.log.Bounds + `) AS b` +
		` UNION ALL SELECT 2, l.at, NULL, NULL, NULL, l.id, (SELECT r.` + k.owner + ` FROM ` + k.base + ` r WHERE r.id = l.id), NULL` +
		` FROM (SELECT id, ` + c.log.Position + ` AS at FROM ` + c.log.table + ` WHERE ` + c.log.Position + ` >= (SELECT pos ` + part + `) AND kind = ?` +
		` ORDER BY ` + c.log.Position + ` LIMIT COALESCE((SELECT ? * CASE WHEN replay_max BETWEEN 0 AND ? THEN replay_max ELSE 0 END ` + part + `), 0) + 1) AS l` +
		` UNION ALL SELECT 3, NULL, NULL, NULL, NULL, id, NULL, NULL FROM ` + c.log.table + ` WHERE ` + bw + ` AND kind = ?`
	t := int(k.t)
	return q, append([]any{storedPartMax(c.limit), t, owner, t, owner, t, storedReplayEntries, storedReplayMax(partSaveRowsMax), t, owner}, append(bargs, t)...)
}

// replayStored brings a stored partition from its position to the log's:
// the entries since it (ok false past storedReplayMax of them, or when the
// log was trimmed past it) remove their rows from it, and those now of
// owner are read again.
func (c *textCache) replayStored(ctx context.Context, db *sql.DB, t search.ContentType, owner string, ld *partRead) (n int, ok bool, err error) {
	k := kinds[t]
	where, args := c.log.since(ld.pos)
	q := loggedOwnersQuery(k, where)
	// Prepared where the engine plans each run anew (parsing it was a
	// tenth of a load on SQLite); PostgreSQL's generic plan for a
	// position that is a parameter may read the whole log (see
	// changedSince).
	var st *sql.Stmt
	if c.prepPositions {
		st = c.prepare(ctx, q)
	}
	tx, cur, floor, err := c.log.read(ctx, db, c.logIso, "text cache")
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback()
	if ld.pos.trimmed(floor) {
		return 0, false, nil
	}
	most := storedReplayMax(ld.p.live)
	src, done := inTx(ctx, tx, st)
	defer done()
	rows, err := src.QueryContext(ctx, q, append(args, int(t), most+1)...)
	if err != nil {
		return 0, false, fmt.Errorf("search: text cache: read log of %s: %w", k.name, err)
	}
	var again []int64
	var ids []int64
	for rows.Next() {
		var id int64
		var o sql.NullString
		if err := rows.Scan(&id, &o); err != nil {
			rows.Close()
			return 0, false, fmt.Errorf("search: text cache: read log of %s: %w", k.name, err)
		}
		ids = append(ids, id)
		if o.Valid && o.String == owner {
			again = append(again, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, false, fmt.Errorf("search: text cache: read log of %s: %w", k.name, err)
	}
	if len(ids) > most {
		return 0, false, nil
	}
	for _, id := range ids {
		ld.p.remove(id)
	}
	if len(again) > 0 {
		err = c.readByID(ctx, tx, t, again, &textScratch{part: true}, func(r textRow) error {
			if r.doc.owner == owner {
				ld.p.add(r.doc, r.body, r.terms)
			}
			return nil
		})
		if err != nil {
			return 0, false, err
		}
		ld.p.maybeCompact()
	}
	ld.pos = later(ld.pos, cur)
	return len(ids), true, nil
}

// partSaveRowsMax bounds the rows of a partition saved: it is encoded
// under the cache's read lock (a catch-up, and the searches behind it,
// wait for it: about 3.4 µs a row, its terms sorted by name) and written
// under the store's write lock; an owner of more rows reads them at each
// first search.
const partSaveRowsMax = 5000

// partSaveWait bounds a partition save, its wait for the write lock
// included.
const partSaveWait = 5 * time.Second

// saveLater writes owner's resident partition of kind t to
// search_text_parts in the background, unless a save of it is running.
func (c *textCache) saveLater(t search.ContentType, owner string) {
	s := &c.saves
	if s.off || s.write == nil {
		return
	}
	key := partKey{t, owner}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.running[key] {
		return
	}
	if s.running == nil {
		s.running = map[partKey]bool{}
	}
	s.running[key] = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// Not cancelled by Close, which waits for it: a save is one short
		// transaction, and one a closing process drops is a load the next
		// process repeats. A database locked for long ends it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ld.life), partSaveWait)
		defer cancel()
		if err := c.savePart(ctx, t, owner); err != nil {
			c.ld.log.Debug("search: text cache: partition not saved", "kind", kinds[t].name, "owner", owner, "err", err)
		}
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
	}()
}

// savePart encodes owner's resident partition of kind t at the cache's
// position and writes it, unless one of owner's rows changed since that
// position (the part would hold words its rows no longer do).
func (c *textCache) savePart(ctx context.Context, t search.ContentType, owner string) error {
	c.mu.RLock()
	p, pos := c.owned[t][owner], c.pos
	var data []byte
	var live int
	var held map[int64]bool
	// An owner without rows (any name a search scope gives) has nothing
	// worth a write, nor a row whose change would ever drop it.
	if c.partial && p != nil && p.live > 0 && p.live <= partSaveRowsMax && pos.valid() {
		data, live = encodePart(p, pos, c.fingerprint(t)), p.live
		held = make(map[int64]bool, len(p.slots))
		for id := range p.slots {
			held[id] = true
		}
	}
	c.mu.RUnlock()
	if data == nil {
		return nil
	}
	if c.saves.beforeWrite != nil {
		c.saves.beforeWrite()
	}
	k := kinds[t]
	where, args := c.log.since(pos)
	// One write transaction holding the store's write lock (SQLite) or
	// the part's (TextPartLocker: not to be had while a write that drops
	// the part is in flight): the check sees every write committed before
	// it, and a write that drops the part after the commit takes the part
	// with it.
	write := func(ctx context.Context, ex driver.Execer) error {
		changed, err := ownerChanged(ctx, ex, k, where, args, owner, held)
		if err != nil {
			return fmt.Errorf("read log of %s: %w", k.name, err)
		}
		// Read after the check: entries since pos trimmed before it (a
		// delete's among them) leave the floor past pos, and the check
		// could not see them.
		var now logPos
		var floor int64
		if err := scanBounds(queryRow(ctx, ex, c.log.Bounds), &now, &floor); err != nil {
			return fmt.Errorf("read log of %s: %w", k.name, err)
		}
		changed = changed || pos.trimmed(floor)
		if !changed && t == search.Blocks {
			// One of the owner's blocks waits for its re-index: the part
			// may hold its rendering (what PostgreSQL's load reads), words
			// the index may never hold, and a rewrite before the re-index
			// fires no trigger that would drop them.
			if err := queryRow(ctx, ex, blocksWaitingQuery, owner).Scan(&changed); err != nil {
				return fmt.Errorf("read blocks waiting for their re-index: %w", err)
			}
		}
		if changed {
			c.saves.skipped.Add(1)
			return nil
		}
		if c.saves.inWrite != nil {
			c.saves.inWrite()
		}
		// (pos and replay_max: readStored's statement reads the log
		// since the part beside it.)
		if _, err := ex.ExecContext(ctx, `INSERT INTO search_text_parts (kind, owner, data, pos, replay_max) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (kind, owner) DO UPDATE SET data = excluded.data, pos = excluded.pos, replay_max = excluded.replay_max`,
			int(t), owner, data, pos.lowest(), storedReplayMax(live)); err != nil {
			return err
		}
		c.saves.saved.Add(1)
		return nil
	}
	// A busy lock (a write that drops parts of the lock's owners in
	// flight, or a save of another owner sharing it) is tried again a few
	// times: both are mostly short, and a save given up is a load from the
	// rows in the next process.
	var err error
	for try := 0; ; try++ {
		err = c.saves.write(ctx, t, owner, write)
		if !errors.Is(err, errPartBusy) {
			break
		}
		c.saves.busy.Add(1)
		if try == partBusyTries-1 {
			break
		}
		select {
		case <-time.After(partBusyWait << try):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if errors.Is(err, errPartBusy) {
		c.saves.skipped.Add(1)
		return nil
	}
	return err
}

// blocksWaitingQuery reports whether one of an owner's blocks is marked
// for the lazy re-index (fts_blocks_dirty).
const blocksWaitingQuery = `SELECT EXISTS (SELECT 1 FROM fts_blocks_dirty d JOIN blocks b ON b.id = d.id WHERE b.owner = ?)`

// partBusyTries and partBusyWait: a save whose part's lock is busy
// (TextPartLocker) tries this many times in all, waiting partBusyWait,
// then twice as long, and so on, between them (150 ms in all).
const (
	partBusyTries = 4
	partBusyWait  = 10 * time.Millisecond
)

// loggedOwnersQuery reads the rows of kind k logged where where says (a
// log position's since), at most as many as its last argument, each
// with its owner now (NULL: the row is gone).
func loggedOwnersQuery(k *kind, where string) string {
	return `SELECT l.id, b.` + k.owner + ` FROM (SELECT DISTINCT id FROM search_text_log WHERE ` + where +
		` AND kind = ? LIMIT ?) l LEFT JOIN ` + k.base + ` b ON b.id = l.id`
}

// partSaveCheckMax is how many log entries since a part's position a
// save reads to tell whether its owner's rows changed; past it, they
// are taken to have.
const partSaveCheckMax = 4096

// ownerChanged reports whether a row of kind k that the part held
// (held) or that is owner's now, or one that is gone, was logged since
// the part's position (where, args): the part would hold words its rows
// no longer do. A row held that moved to another owner counts: that
// owner's triggers drop that owner's part only.
func ownerChanged(ctx context.Context, ex driver.Execer, k *kind, where string, args []any, owner string, held map[int64]bool) (bool, error) {
	rows, err := ex.QueryContext(ctx, loggedOwnersQuery(k, where), append(args, int(k.t), partSaveCheckMax+1)...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id int64
		var o sql.NullString
		if err := rows.Scan(&id, &o); err != nil {
			return false, err
		}
		if n++; n > partSaveCheckMax || !o.Valid || o.String == owner || held[id] {
			return true, nil
		}
	}
	return false, rows.Err()
}

// closeSaves stops new saves and waits for those running.
func (c *textCache) closeSaves() {
	c.saves.mu.Lock()
	c.saves.closed = true
	c.saves.mu.Unlock()
	c.saves.wg.Wait()
}
