package serve_test

import (
	"io"
	"testing"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/testenv"
)

// A body of no announced length is read into pooled pieces: one refused
// past the cap allocates its pieces once and then next to nothing, where
// a growing buffer allocated 16 MiB for each (4 MiB, the cap, in ever
// larger blocks, and the collections they set off slowed other agents'
// calls). What an accepted body costs is the reader's (bodyPieces) and
// then the MCP SDK's decoding.
func TestRefusedChunkedBodyAllocation(t *testing.T) {
	if testenv.Race {
		t.Skip("the race detector's sync.Pool drops a quarter of its puts")
	}
	d := newDoor(t, &serve.Options{TokenBytesRate: -1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	const limit = 4 << 20
	var cold, warm uint64
	for i, at := range []*uint64{&cold, &warm} {
		*at = testenv.HeapAllocated(func() {
			if w := d.serveBody(t.Context(), ada, sid, io.LimitReader(spaces{}, 16<<20), -1); w.Code != 413 {
				t.Fatalf("request %d: status %d, want 413", i, w.Code)
			}
		})
	}
	t.Logf("a 16 MiB chunked body: allocated %.2f MiB cold, %.2f MiB warm", float64(cold)/(1<<20), float64(warm)/(1<<20))
	if cold > limit+1<<20 || warm > 1<<20 {
		t.Errorf("a 16 MiB chunked body refused at %d: allocated %d bytes, then %d; want at most %d, then %d", limit, cold, warm, limit+1<<20, 1<<20)
	}
}

type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
