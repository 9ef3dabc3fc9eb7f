package serve

import (
	"io"
	"sync"
)

// pieceBytes is the size of the pieces bodyPieces reads into.
const pieceBytes = 32 << 10

// bodyPieces reads bodies whose length is not announced (a chunked MCP
// body, a /sync frame) into pooled pieces, and copies them into one slice
// of the exact size once the body has ended. A growing buffer (io.ReadAll,
// bytes.Buffer) allocates several times the body on its way, in ever
// larger blocks: reading one body of the 4 MiB cap allocated about 16 MiB,
// and the garbage collections those allocations set off, on a small heap,
// slowed every other agent's calls for tens of milliseconds. A body
// refused past its cap now allocates nothing once the pool is warm; one
// accepted allocates its size. The zero value is ready to use.
type bodyPieces struct {
	pool sync.Pool // of *[pieceBytes]byte
}

// readAll reads r to its end, as io.ReadAll does: a read's error other
// than io.EOF is returned, and the bytes read before it are dropped. An
// empty body is nil.
func (p *bodyPieces) readAll(r io.Reader) ([]byte, error) {
	var held []*[pieceBytes]byte
	defer func() {
		for _, b := range held {
			p.pool.Put(b)
		}
	}()
	n := 0
	for {
		b, _ := p.pool.Get().(*[pieceBytes]byte)
		if b == nil {
			b = new([pieceBytes]byte)
		}
		held = append(held, b)
		m, err := 0, error(nil)
		for m < pieceBytes && err == nil {
			var k int
			k, err = r.Read(b[m:])
			m += k
		}
		n += m
		if err == io.EOF { // as io.ReadAll: a reader's own end, not a wrapped or unexpected one
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, nil
	}
	body := make([]byte, n)
	for i, b := range held {
		copy(body[i*pieceBytes:], b[:min(pieceBytes, n-i*pieceBytes)])
	}
	return body, nil
}
