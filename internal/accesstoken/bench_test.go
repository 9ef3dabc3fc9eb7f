package accesstoken_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// What engram serve spends checking one request's token (one indexed read
// of its row; the use is recorded at most once a minute).
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	s, err := memory.Open(ctx, filepath.Join(b.TempDir(), "tok.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tk := accesstoken.Of(s)
	for range 100 {
		if _, _, err := tk.Create(ctx, accesstoken.Spec{Agent: "ada"}); err != nil {
			b.Fatal(err)
		}
	}
	_, secret, err := tk.Create(ctx, accesstoken.Spec{Agent: "ada"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.Verify(ctx, secret); err != nil {
			b.Fatal(err)
		}
	}
}
