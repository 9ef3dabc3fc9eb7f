package serve

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/iotest"
	"time"

	"github.com/coder/websocket"

	"github.com/engram-go/engram/internal/testenv"
)

// bodyPieces.readAll reads what io.ReadAll reads, however the reader
// hands it over, and fails where io.ReadAll fails: a body cut short
// (io.ErrUnexpectedEOF from a chunked reader) is an error, not a shorter
// body.
func TestBodyPiecesReadAll(t *testing.T) {
	var p bodyPieces
	shapes := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"a byte at a time", iotest.OneByteReader},
		{"half reads", iotest.HalfReader},
		{"data with EOF", iotest.DataErrReader},
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 100, pieceBytes - 1, pieceBytes, pieceBytes + 1, 3*pieceBytes + 7, 1 << 20} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rnd.Uint32())
		}
		for _, s := range shapes {
			if s.name == "a byte at a time" && n > 4*pieceBytes {
				continue
			}
			got, err := p.readAll(s.wrap(bytes.NewReader(data)))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%d bytes, %s: read %d bytes (equal: %v), error %v", n, s.name, len(got), bytes.Equal(got, data), err)
			}
			if n == 0 && got != nil {
				t.Fatalf("an empty body, %s: %q, want nil", s.name, got)
			}
		}
	}
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		r    io.Reader
		want error
	}{
		{"an error after 100 kB", io.MultiReader(bytes.NewReader(make([]byte, 100_000)), iotest.ErrReader(boom)), boom},
		{"cut short", io.MultiReader(bytes.NewReader(make([]byte, 70_000)), iotest.ErrReader(io.ErrUnexpectedEOF)), io.ErrUnexpectedEOF},
		{"an error at once", iotest.ErrReader(boom), boom},
		{"over the cap", http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(bytes.NewReader(make([]byte, 5000))), 4096), &http.MaxBytesError{}},
	} {
		got, err := p.readAll(c.r)
		if got != nil || err == nil {
			t.Fatalf("%s: %d bytes, error %v; want none and an error", c.name, len(got), err)
		}
		if mbe := (*http.MaxBytesError)(nil); !errors.Is(err, c.want) && !(errors.As(c.want, &mbe) && errors.As(err, &mbe)) {
			t.Fatalf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
}

// A body read whole allocates its size once the pool is warm, and one
// refused allocates next to nothing (io.ReadAll: about five times the
// body, bytes.Buffer about four).
func TestBodyPiecesAllocation(t *testing.T) {
	if testenv.Race {
		t.Skip("the race detector's sync.Pool drops a quarter of its puts")
	}
	var p bodyPieces
	const n = 3 << 20
	data := bytes.Repeat([]byte("x"), n)
	p.readAll(bytes.NewReader(data)) // warm
	if got := testenv.HeapAllocated(func() { p.readAll(bytes.NewReader(data)) }); got > n+64<<10 {
		t.Errorf("a %d-byte body allocated %d bytes; want its size", n, got)
	}
	over := func() io.Reader {
		return http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(bytes.NewReader(data)), n/2)
	}
	p.readAll(over())
	if got := testenv.HeapAllocated(func() { p.readAll(over()) }); got > 64<<10 {
		t.Errorf("a %d-byte body refused at %d allocated %d bytes; want next to nothing", n, n/2, got)
	}
}

// A /sync frame is read in pieces too: a 3 MiB frame allocates about its
// size (io.ReadAll allocated about 15 MiB).
func TestFrameReadAllocation(t *testing.T) {
	if testenv.Race {
		t.Skip("the race detector's sync.Pool drops a quarter of its puts")
	}
	const n = 3 << 20
	frame := bytes.Repeat([]byte{7}, n)
	var bodies bodyPieces
	got := make(chan []byte, 4)
	allocs := make(chan uint64, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(2 * n)
		conn := wsConn{c: c, timeout: time.Minute, bodies: &bodies}
		for {
			var f []byte
			var err error
			a := testenv.HeapAllocated(func() { f, err = conn.Read(r.Context()) })
			if err != nil {
				return
			}
			got <- f
			allocs <- a
		}
	}))
	defer srv.Close()
	c, _, err := websocket.Dial(t.Context(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var last uint64
	for i := range 3 { // the first warms the pool
		if err := c.Write(t.Context(), websocket.MessageBinary, frame); err != nil {
			t.Fatal(err)
		}
		if f := <-got; !bytes.Equal(f, frame) {
			t.Fatalf("frame %d: read %d bytes, not the %d sent", i, len(f), n)
		}
		last = <-allocs
	}
	if last > n+512<<10 {
		t.Errorf("reading a %d-byte frame allocated %d bytes; want about its size", n, last)
	}
}
