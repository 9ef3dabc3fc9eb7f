package memory_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

var longMode = flag.Bool("long", false, "run the reliability tests with more rounds")

// The helper roles below run in child processes: the test binary re-executes
// itself with ENGRAM_TEST_ROLE set and -test.run selecting the role's test.

const procWriters = 8

// procScale divides the cross-process tests' line counts: by raceScale
// under the race detector, and by 4 more unless the long tests run. CI
// runs them at full size (.ci/run's reliability step, without -race).
func procScale() int {
	if testenv.Long() {
		return raceScale
	}
	return 4 * raceScale
}

// procLinesPerProc is TestTwoProcessesOneBlock's lines per process: at
// full size two processes write 10,000 lines in all.
func procLinesPerProc() int { return 5000 / procScale() }

func childEnv(role string, kv ...string) []string {
	env := append(os.Environ(), "ENGRAM_TEST_ROLE="+role)
	return append(env, kv...)
}

// TestTwoProcessesOneBlock: two OS processes × 8 goroutines append distinct
// lines to one shared block; every line is present exactly once in both
// processes afterwards and after reopening.
func TestTwoProcessesOneBlock(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	dir := t.TempDir()
	runProcessesOneBlock(t, filepath.Join(dir, "shared.db"), dir, 2, procLinesPerProc(), false)
}

// TestTwoProcessesAcrossEpochs is TestTwoProcessesOneBlock with the block
// rebased onto new epochs while both processes write: by compaction (a
// tiny HistoryLimit) and by an explicit Rebase four times in each
// process. Every line is still there exactly once: no write is lost to an
// epoch switch and none is merged in twice.
func TestTwoProcessesAcrossEpochs(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	dir := t.TempDir()
	runProcessesOneBlock(t, filepath.Join(dir, "shared.db"), dir, 2, 1600/procScale(), true)
}

// TestTwoProcessesWriteBackAcrossEpochs is TestTwoProcessesAcrossEpochs
// with both processes in write-back mode: each process's appends stay
// pending across the other's rebases (one goroutine flushes now and then,
// Close flushes the rest), and every line is still there exactly once.
func TestTwoProcessesWriteBackAcrossEpochs(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	dir := t.TempDir()
	runProcessesOneBlock(t, filepath.Join(dir, "shared.db"), dir, 2, 1600/procScale(), true, "ENGRAM_WRITEBACK=true")
}

// childOptions are the child processes' options: they check that no
// update is lost, not how long a write waits for the other process's
// lock, so a loaded machine (two processes of writers on two cores, race
// detector on) must not turn a long wait into an error.
var childOptions = &memory.Options{BusyTimeout: 2 * time.Minute}

// epochOptions make every few writes a candidate for a new epoch.
var epochOptions = &memory.Options{CompactAfter: 16, HistoryLimit: 1, BusyTimeout: 2 * time.Minute}

// runProcessesOneBlock is TestTwoProcessesOneBlock with procs processes on
// the store at path (a file or a PostgreSQL URL); dir holds the barrier
// files.
func runProcessesOneBlock(t *testing.T, path, dir string, procs, lines int, epochs bool, env ...string) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: "board", CharLimit: blocks.MaxCharLimit}); err != nil {
		t.Fatal(err)
	}
	for p := 0; p < procs; p++ {
		if err := c.Agent("owner").Block("board").Share(ctx, fmt.Sprintf("proc%d", p), blocks.Append); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()

	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRoleAppender$", "-test.v")
		cmd.Env = childEnv("appender", "ENGRAM_DB="+path, "ENGRAM_PROC="+strconv.Itoa(p), "ENGRAM_PROCS="+strconv.Itoa(procs), "ENGRAM_LINES="+strconv.Itoa(lines), "ENGRAM_DIR="+dir,
			"ENGRAM_EPOCHS="+strconv.FormatBool(epochs))
		cmd.Env = append(cmd.Env, env...)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d failed: %v\n%s", p, err, outs[p])
		}
	}
	c, err = memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	doc, err := c.Agent("owner").Block("board").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := doc.Text()
	if err := checkAllLines(text, procs, lines); err != nil {
		t.Fatalf("after reopening: %v", err)
	}
	rendered, _ := c.Agent("owner").Block("board").Render(ctx)
	if rendered != text {
		t.Fatal("stored rendering differs from the document")
	}
	if epochs {
		var epoch, archived int
		if err := storeaccess.Backend(c).DB().QueryRow(`SELECT epoch, (SELECT count(*) FROM block_archive) FROM blocks WHERE label = 'board'`).Scan(&epoch, &archived); err != nil {
			t.Fatal(err)
		}
		if epoch < 4 || archived != epoch {
			t.Fatalf("epoch %d with %d archived epochs: the test did not exercise epoch switches", epoch, archived)
		}
		t.Logf("%d epochs", epoch)
	}
}

func lineOf(p, g, i int) string { return fmt.Sprintf("p%d-g%d-%04d", p, g, i) }

func checkAllLines(text string, procs, lines int) error {
	counts := map[string]int{}
	for _, l := range strings.Split(text, "\n") {
		if l != "" {
			counts[l]++
		}
	}
	per := lines / procWriters
	for p := 0; p < procs; p++ {
		for g := 0; g < procWriters; g++ {
			for i := 0; i < per; i++ {
				if n := counts[lineOf(p, g, i)]; n != 1 {
					return fmt.Errorf("line %s present %d times", lineOf(p, g, i), n)
				}
			}
		}
	}
	if len(counts) != procs*procWriters*per {
		return fmt.Errorf("%d distinct lines, want %d", len(counts), procs*procWriters*per)
	}
	return nil
}

// TestRoleAppender is the child side of TestTwoProcessesOneBlock.
func TestRoleAppender(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "appender" {
		t.Skip("child role")
	}
	ctx := context.Background()
	p, _ := strconv.Atoi(os.Getenv("ENGRAM_PROC"))
	procs, _ := strconv.Atoi(os.Getenv("ENGRAM_PROCS"))
	lines, _ := strconv.Atoi(os.Getenv("ENGRAM_LINES"))
	dir := os.Getenv("ENGRAM_DIR")
	opts := childOptions
	epochs := os.Getenv("ENGRAM_EPOCHS") == "true"
	if epochs {
		opts = epochOptions
	}
	writeBack := os.Getenv("ENGRAM_WRITEBACK") == "true"
	if writeBack {
		o := *opts
		o.WriteBack = true
		opts = &o
	}
	c, err := memory.Open(ctx, fresh(os.Getenv("ENGRAM_DB")), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	agent := fmt.Sprintf("proc%d", p)
	var wg sync.WaitGroup
	per := lines / procWriters
	for g := 0; g < procWriters; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := c.Agent(agent).Shared("owner", "board").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: lineOf(p, g, i) + "\n"}); err != nil {
					t.Error(err)
					return
				}
				if epochs && g == 0 && i%max(per/4, 5) == 0 {
					if err := c.Agent("owner").Block("board").Rebase(ctx); err != nil {
						t.Error(err)
						return
					}
				}
				if writeBack && g == 1 && i%50 == 49 {
					if err := c.Flush(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	if writeBack {
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Barrier: wait for the other process, then check this process sees
	// every line of both.
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("done-%d", p)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		done := 0
		for q := 0; q < procs; q++ {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("done-%d", q))); err == nil {
				done++
			}
		}
		if done == procs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other process did not finish")
		}
		time.Sleep(20 * time.Millisecond)
	}
	read := func() error {
		doc, err := c.Agent(agent).Shared("owner", "board").Doc(ctx)
		if err != nil {
			return err
		}
		text, _ := doc.Text()
		return checkAllLines(text, procs, lines)
	}
	err = read()
	if err == nil {
		return
	}
	if !strings.HasPrefix(os.Getenv("ENGRAM_DB"), "postgres") {
		t.Fatalf("process %d afterwards: %v", p, err)
	}
	// On PostgreSQL a cached block learns of other processes' commits by
	// notification, so a read may lag the other process's last writes by
	// their delivery (documented). A store with nothing cached must see
	// every line at once (else an update is lost), and this one within a
	// bounded time (else its cache never catches up).
	fresh, ferr := memory.Open(ctx, fresh(os.Getenv("ENGRAM_DB")), opts)
	if ferr != nil {
		t.Fatal(ferr)
	}
	doc, ferr := fresh.Agent(agent).Shared("owner", "board").Doc(ctx)
	if ferr != nil {
		t.Fatal(ferr)
	}
	text, _ := doc.Text()
	fresh.Close()
	if ferr := checkAllLines(text, procs, lines); ferr != nil {
		t.Fatalf("process %d afterwards, read by a fresh store: %v (its cached read: %v)", p, ferr, err)
	}
	lagging := time.Now()
	for err != nil && time.Since(lagging) < 30*time.Second {
		time.Sleep(20 * time.Millisecond)
		err = read()
	}
	if err != nil {
		t.Fatalf("process %d afterwards: its cached block still lacks other processes' writes after 30 s: %v", p, err)
	}
	t.Logf("process %d: its cached block lagged the other processes' last writes by up to %v (notification delivery)", p, time.Since(lagging))
}

// TestKillDuringWrites: a child appends in a loop and reports each
// acknowledged write; the parent kills it with SIGKILL at a random moment,
// reopens, and finds every acknowledged write; integrity_check says ok.
func TestKillDuringWrites(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	rounds := 20
	switch {
	case *longMode:
		rounds = 200
	case testenv.Race && !testenv.Long():
		rounds = 10 // each round starts a child under the race detector
	}
	runKillDuringWrites(t, filepath.Join(t.TempDir(), "crash.db"), rounds)
}

// runKillDuringWrites is TestKillDuringWrites on the store at path (a file
// or a PostgreSQL URL).
func runKillDuringWrites(t *testing.T, path string, rounds int) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	totalAcked := 0
	for round := 0; round < rounds; round++ {
		// Most rounds kill the child only after it acknowledged at least
		// killFloor writes: without a floor, a child that dies or stalls
		// before writing gives rounds with nothing acknowledged and nothing
		// lost, which pass. Every fourth round kills at a random moment
		// from the start instead (during Open or CreateBlock, too).
		early := round%4 == 3
		cmd := exec.Command(os.Args[0], "-test.run=^TestRoleCrashWriter$")
		cmd.Env = childEnv("crashwriter", "ENGRAM_DB="+path, "ENGRAM_ROUND="+strconv.Itoa(round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := map[string]bool{}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Kill after killFloor plus a random number of acknowledged writes
		// (0..59), or after a random time once the floor is reached,
		// whichever comes first; early rounds after a random time alone.
		floor := killFloor
		if early {
			floor = 0
		}
		killAfter := floor + rng.Intn(60)
		timer := time.NewTimer(time.Duration(50+rng.Intn(400)) * time.Millisecond)
		deadline := time.NewTimer(killDeadline)
		timedOut, exited := false, false
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					// The child writes until it is killed: its output
					// ending first means it stopped by itself.
					exited = true
					break read
				}
				if v, found := strings.CutPrefix(l, "ACK "); found {
					acked[v] = true
					if len(acked) >= killAfter {
						break read
					}
				}
			case <-timer.C:
				if len(acked) >= floor {
					break read
				}
				timedOut = true // kill at the floor
			case <-deadline.C:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
				t.Fatalf("round %d: the child acknowledged %d writes in %v (want at least %d before the kill)\nchild stderr:\n%s",
					round, len(acked), killDeadline, floor, stderr.String())
			}
			if timedOut && len(acked) >= floor {
				break read
			}
		}
		timer.Stop()
		deadline.Stop()
		_ = cmd.Process.Signal(syscall.SIGKILL)
		// Drain: an ACK printed before the kill still counts.
		for l := range lines {
			if v, found := strings.CutPrefix(l, "ACK "); found {
				acked[v] = true
			}
		}
		werr := cmd.Wait()
		// Only our SIGKILL may end the child: an exit of its own (an error
		// from Open, CreateBlock or an append, a panic, a failed test) is a
		// failure even if every write it acknowledged survived.
		var ee *exec.ExitError
		killed := errors.As(werr, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
		if exited || !killed {
			t.Fatalf("round %d: the child ended by itself (%v) after %d acknowledged writes\nchild stderr:\n%s",
				round, werr, len(acked), stderr.String())
		}
		if len(acked) < floor {
			t.Fatalf("round %d: %d acknowledged writes before the kill, want at least %d", round, len(acked), floor)
		}
		totalAcked += len(acked)

		c, err := memory.Open(ctx, fresh(path), nil)
		if err != nil {
			t.Fatalf("round %d: reopen: %v\nchild stderr:\n%s", round, err, stderr.String())
		}
		if storeaccess.Backend(c).Name() == "sqlite" {
			var check string
			if err := storeaccess.Backend(c).DB().QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
				t.Fatalf("round %d: integrity_check = %q, %v", round, check, err)
			}
		}
		label := fmt.Sprintf("round-%d", round)
		// On PostgreSQL the child's last write may still commit after the
		// kill: its transaction went to the server whole, COMMIT included
		// (one round trip), and the server runs what it received. A
		// rendering that moved between the two reads is that write; one
		// that holds still must match the document.
		var text string
		for try := 0; ; try++ {
			text, err = c.Agent("writer").Block(label).Render(ctx)
			if err != nil && len(acked) > 0 {
				t.Fatalf("round %d: %v (acked %d)", round, err, len(acked))
			}
			doc, derr := c.Agent("writer").Block(label).Doc(ctx)
			if derr != nil {
				break
			}
			docText, _ := doc.Text()
			if docText == text {
				break
			}
			if again, _ := c.Agent("writer").Block(label).Render(ctx); again == text || try == 20 {
				t.Fatalf("round %d: document and stored rendering differ", round)
			}
			time.Sleep(50 * time.Millisecond)
		}
		present := map[string]bool{}
		for _, l := range strings.Split(text, "\n") {
			present[l] = true
		}
		for v := range acked {
			if !present[v] {
				t.Fatalf("round %d: acknowledged write %q lost (acked %d)", round, v, len(acked))
			}
		}
		c.Close()
	}
	t.Logf("%d rounds, %d acknowledged writes, none lost", rounds, totalAcked)
}

// killFloor is how many writes the child must acknowledge before most
// rounds of TestKillDuringWrites kill it; killDeadline bounds the wait for
// them.
const (
	killFloor    = 5
	killDeadline = 60 * time.Second
)

// TestRoleCrashWriter is the child side of TestKillDuringWrites.
func TestRoleCrashWriter(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "crashwriter" {
		t.Skip("child role")
	}
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(os.Getenv("ENGRAM_DB")), childOptions)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	label := "round-" + os.Getenv("ENGRAM_ROUND")
	if _, err := c.Agent("writer").CreateBlock(ctx, memory.BlockSpec{Label: label, CharLimit: blocks.MaxCharLimit}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		line := fmt.Sprintf("w%06d", i)
		if err := c.Agent("writer").Block(label).Append(ctx, line+"\n"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("ACK %s\n", line)
	}
}

const limitBlocks = 30

// TestTwoProcessesRespectLimits: two OS processes each append 601
// characters to the same 1,000-character blocks and push onto the same
// lists of MaxItems 3 holding 2 items. Every write is validated against the
// fresh merged state inside its transaction, so exactly one of each pair
// wins and no block or list ends up over its limit.
func TestTwoProcessesRespectLimits(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "" {
		t.Skip("parent test")
	}
	runProcessesRespectLimits(t, filepath.Join(t.TempDir(), "limits.db"))
}

// runProcessesRespectLimits is TestTwoProcessesRespectLimits on the store
// at path (a file or a PostgreSQL URL).
func runProcessesRespectLimits(t *testing.T, path string) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	list := schema.List{MaxItems: 3}
	for i := 0; i < limitBlocks; i++ {
		if _, err := c.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: fmt.Sprintf("text%d", i), CharLimit: 1000}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: fmt.Sprintf("list%d", i), Schema: list, Value: []any{"a", "b"}}); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for p := 0; p < 2; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRoleLimiter$", "-test.v")
		cmd.Env = childEnv("limiter", "ENGRAM_DB="+path, "ENGRAM_PROC="+strconv.Itoa(p))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	acks := map[string]int{}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d failed: %v\n%s", p, err, outs[p])
		}
		for _, l := range strings.Split(outs[p].String(), "\n") {
			if k, ok := strings.CutPrefix(l, "ACK "); ok {
				acks[k]++
			}
		}
	}
	c, err = memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < limitBlocks; i++ {
		tl, ll := fmt.Sprintf("text%d", i), fmt.Sprintf("list%d", i)
		if acks[tl] != 1 || acks[ll] != 1 {
			t.Errorf("%s acknowledged %d times, %s %d times; want exactly one winner each", tl, acks[tl], ll, acks[ll])
		}
		if r, _ := c.Agent("owner").Block(tl).Render(ctx); len(r) != 601 {
			t.Errorf("%s holds %d characters (limit 1000, two 601-character appends)", tl, len(r))
		}
		doc, err := c.Agent("owner").Block(ll).Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if items, _ := doc.Items(); len(items) != 3 {
			t.Errorf("%s has %d items, MaxItems is 3", ll, len(items))
		}
	}
}

// TestRoleLimiter is the child side of TestTwoProcessesRespectLimits: it
// prints "ACK <label>" for each acknowledged write; refusals must be limit
// errors.
func TestRoleLimiter(t *testing.T) {
	if os.Getenv("ENGRAM_TEST_ROLE") != "limiter" {
		t.Skip("child role")
	}
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(os.Getenv("ENGRAM_DB")), childOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	chunk := strings.Repeat(os.Getenv("ENGRAM_PROC"), 601)
	for i := 0; i < limitBlocks; i++ {
		for _, w := range []struct {
			label string
			edit  memory.Edit
		}{
			{fmt.Sprintf("text%d", i), memory.Edit{Op: blocks.OpAppendText, Text: chunk}},
			{fmt.Sprintf("list%d", i), memory.Edit{Op: blocks.OpPushItem, Value: "from " + os.Getenv("ENGRAM_PROC")}},
		} {
			err := c.Agent("owner").Block(w.label).Apply(ctx, w.edit)
			switch {
			case err == nil:
				fmt.Printf("ACK %s\n", w.label)
			case errors.Is(err, blocks.ErrLimit) || errors.Is(err, schema.ErrInvalid):
			default:
				t.Errorf("%s: %v", w.label, err)
			}
		}
	}
}
