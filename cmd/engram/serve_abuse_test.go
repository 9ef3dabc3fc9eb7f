package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/abuse"
	"github.com/engram-go/engram/internal/testenv"
)

// TestServeUnderAbuse: an engram serve process (the command built
// without the race detector, with this test's build tags) on a fresh store is attacked over /sync and /mcp by one agent's tokens while
// another agent appends to its block over MCP. Each attack is held to
// abuse.Goal: at most 2 s of server CPU per request and 256 MiB of peak
// RSS growth (both scaled down with the attack's size where it runs below
// the bench's), the victim's p99 during the attack at most twice its
// quiet p99 (plus abuseSlack), no acknowledged write lost and the
// process alive. An attack whose only fault is the victim's p99 is run
// once more against a quiet baseline taken again just before it. The bench's "serve under abuse" section runs the same
// attacks at full size.
// abuseRetries is how many times TestServeUnderAbuse runs an attack
// again, against a quiet baseline measured again, when its only fault is
// the victim's p99.
const abuseRetries = 2

func TestServeUnderAbuse(t *testing.T) {
	if raceEnabled {
		t.Skip("measures latency and CPU: run without -race (CI's second pass)")
	}
	if os.Getenv("ENGRAM_SERVE_CHILD") != "" {
		t.Skip("child")
	}
	testenv.SkipUnlessLong(t, "attacks a serve process for about a minute")
	if runtime.GOOS != "linux" {
		t.Skip("measures the child through /proc")
	}
	ctx := context.Background()
	bin := buildEngram(t)
	h, err := abuse.Start(ctx, &abuse.Options{
		Dir: t.TempDir(),
		Command: func(db string) *exec.Cmd {
			return exec.Command(bin, "--db", db, "--json", "serve", "--addr", "127.0.0.1:0")
		},
		AttackTimeout: 20 * time.Second,
		SettleTimeout: 10 * time.Second,
		MaxRSS:        2 << 30,
		Logf:          t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	finish := func() {
		if closed {
			return
		}
		closed = true
		f, err := h.Close()
		if err != nil {
			t.Error(err)
		}
		t.Logf("victim: %d writes acknowledged, %d lost; %d calls, p50 %v p99 %v; server restarted %d times",
			f.Acked, f.Lost, f.Victim.Calls, f.Victim.P50, f.Victim.P99, f.Restarts)
		if f.Lost > 0 {
			t.Errorf("%d of %d acknowledged writes lost", f.Lost, f.Acked)
		}
		if !f.Alive {
			t.Errorf("the server is not alive at the end: %s", f.Exit)
		}
	}
	defer finish()
	limits := abuse.Goal
	limits.Slack = abuseSlack
	for _, a := range abuse.Attacks(abuseSizes) {
		t.Run(a.Key, func(t *testing.T) {
			r := runAbuse(ctx, t, h, a, h.Quiet())
			for retry := 0; retry < abuseRetries; retry++ {
				v := r.Violations(limits)
				if len(v) != 1 || !r.SlowVictim(limits) {
					break
				}
				// The only fault is the victim's p99. go test runs other
				// packages beside this one on a 2-core machine, so the
				// load the quiet baseline was taken under may have moved
				// (and the victim's client shares its process with the
				// attacker's): take it again and run the attack once
				// more. A server that slows the victim does so every
				// time, and one an attack left slow fails Requiet.
				t.Logf("%s; measuring quiet again and repeating the attack", v[0])
				q, err := h.Requiet(ctx, 3*time.Second, limits)
				if err != nil {
					t.Fatal(err)
				}
				r = runAbuse(ctx, t, h, a, q)
			}
			for _, v := range r.Violations(limits) {
				t.Error(v)
			}
		})
	}
	finish()
}

// runAbuse runs one attack, to be judged against quiet, and logs what it
// cost.
func runAbuse(ctx context.Context, t *testing.T, h *abuse.Harness, a abuse.Attack, quiet abuse.Latency) abuse.Result {
	t.Helper()
	r := h.Run(ctx, a)
	r.Quiet = quiet
	t.Logf("%s: %s", a.Name, r.Outcome)
	t.Logf("server CPU %.2f s, peak RSS +%.1f MiB (from %.1f MiB), %d B sent; victim p50 %v→%v, p99 %v→%v (%.2f×), max %v, over %d calls; %d acknowledged, %d lost; alive %v",
		r.CPU.Seconds(), float64(r.PeakGrowth)/(1<<20), float64(r.RSSBefore)/(1<<20), r.Bytes,
		r.Quiet.P50.Round(time.Microsecond), r.Attacked.P50.Round(time.Microsecond),
		r.Quiet.P99.Round(time.Microsecond), r.Attacked.P99.Round(time.Microsecond), r.Ratio(), r.Attacked.Max.Round(time.Millisecond), r.Attacked.Calls,
		r.Acked, r.Lost, r.Alive)
	return r
}

// buildEngram builds this command into a temporary directory with the
// test binary's build tags (so the server uses the same SQLite driver)
// and without the race detector, whose cost is not the server's.
func buildEngram(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "engram")
	args := []string{"build", "-o", bin}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" && s.Value != "" {
				args = append(args, "-tags", s.Value)
			}
		}
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command builds the server for this test: %v", err)
	}
	start := time.Now()
	out, err := exec.Command(gobin, append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built engram in %v", time.Since(start).Round(time.Millisecond))
	return bin
}
