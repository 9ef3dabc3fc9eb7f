package postgres_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) { b.mu.Lock(); defer b.mu.Unlock(); return b.b.Write(p) }
func (b *logBuf) String() string              { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// On PostgreSQL, a write-back store's unflushed edit is carried across an
// epoch another store started, through the archive (archivedEpochs'
// query reads the archived epoch; no fallback warning), once.
func TestCarryAcrossEpochsPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	logs := &logBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s1, err := memory.Open(ctx, dsn, &memory.Options{HistoryLimit: -1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := memory.Open(ctx, dsn, &memory.Options{HistoryLimit: -1, WriteBack: true, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	a1, a2 := s1.Agent("ann"), s2.Agent("ann")
	if _, err := a1.CreateBlock(ctx, memory.BlockSpec{Label: "t", Value: "start", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	if _, err := a2.Block("t").Render(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a2.Block("t").Append(ctx, "\nours"); err != nil {
		t.Fatal(err)
	}
	if err := a1.Block("t").Append(ctx, "\ntheirs-0"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // two epochs: s2 is two behind
		if err := a1.Block("t").Rebase(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a1.Block("t").Append(ctx, "\ntheirs-"+string(rune('1'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := a1.Block("t").Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"start", "ours", "theirs-0", "theirs-1", "theirs-2"} {
		if strings.Count(got, l) != 1 {
			t.Errorf("%q not once in %q", l, got)
		}
	}
	if l := logs.String(); l != "" {
		t.Errorf("logged:\n%s", l)
	}
}
