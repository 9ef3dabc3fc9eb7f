package memory_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/sqlite"
)

// openFresh opens a new store on a new backend (nothing parsed).
func openFresh(t *testing.T, path string) *memory.Store {
	t.Helper()
	st, err := memory.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestFirstWriteHonoursDeadlineWhileAnotherPrepares: while the writer
// connection is held (a long group, a search index write), a first write
// with no deadline waits there to parse the store's write statements; a
// second first write whose context ends returns the context's error at
// its deadline, as it would queued in the group committer, not once the
// connection is free.
func TestFirstWriteHonoursDeadlineWhileAnotherPrepares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "engram.db")
	st := openFresh(t, path)
	defer st.Close()
	be := storeaccess.Backend(st)

	held := make(chan struct{})
	release := make(chan struct{})
	holderDone := make(chan error, 1)
	go func() {
		holderDone <- be.Write(context.Background(), func(tx *sql.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	defer func() { close(release); <-holderDone }()

	bDone := make(chan error, 1)
	go func() {
		_, err := st.Agent("bob").Messages().Append(context.Background(), memory.Message{Role: memory.RoleUser, Content: "b", BatchID: "s"})
		bDone <- err
	}()
	time.Sleep(100 * time.Millisecond) // bob is in prepareWrites, waiting for the connection

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	cDone := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := st.Agent("carol").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "c", BatchID: "s"})
		cDone <- err
	}()
	select {
	case err := <-cDone:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("carol's write: %v, want the deadline's error", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("a write whose 100 ms deadline passed still blocked after %v (in prepareWrites behind another write's Prepare)", time.Since(start))
	}
}

// TestFirstWritesHammer: many goroutines make a fresh store's
// first writes at once, while the search index / raw backend writes hold
// the writer connection, and OS processes do the same on the same file.
func TestFirstWritesHammer(t *testing.T) {
	if p := os.Getenv("ENGRAM_FIRST_WRITES_CHILD_DB"); p != "" {
		firstWritesHammer(t, p, os.Getenv("ENGRAM_FIRST_WRITES_CHILD_ID"))
		return
	}
	path := filepath.Join(t.TempDir(), "engram.db")
	st := openFresh(t, path) // migrate once
	st.Close()
	var cmds []*exec.Cmd
	for i := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestFirstWritesHammer$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ENGRAM_FIRST_WRITES_CHILD_DB="+path, fmt.Sprintf("ENGRAM_FIRST_WRITES_CHILD_ID=p%d", i))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	firstWritesHammer(t, path, "parent")
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	}
}

func firstWritesHammer(t *testing.T, path, id string) {
	for round := range 5 {
		sb, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := memory.New(context.Background(), sb, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				if g%4 == 3 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Duration(g)*time.Millisecond)
					defer cancel()
				}
				if g%5 == 0 {
					// a raw backend write (as the search index's) holding the writer
					err := sb.Write(ctx, func(tx *sql.Tx) error { time.Sleep(2 * time.Millisecond); return nil })
					if err != nil && ctx.Err() != nil {
						err = nil
					}
					errs <- err
					return
				}
				_, err := st.Agent(fmt.Sprintf("%s-%d-%d", id, round, g)).Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "hello", BatchID: "s"})
				if err != nil && ctx.Err() != nil {
					err = nil
				}
				errs <- err
			}()
		}
		if round%2 == 1 {
			go st.Close() // Close racing the first writes
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s round %d: first writes deadlocked", id, round)
		}
		close(errs)
		for err := range errs {
			if err != nil && round%2 == 0 {
				t.Errorf("%s round %d: %v", id, round, err)
			}
		}
		st.Close()
		sb.Close()
	}
}
