package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/abuse"
)

// abuseSection is the "serve under abuse" section's name (-only "serve
// under abuse").
const abuseSection = "serve under abuse"

// benchAbuse: engram serve under attack while another agent works. The
// engram binary is built as for the serve section and run on a fresh
// store by internal/abuse's harness: a victim agent appends to its block
// over MCP 40 times a second while one attacker agent's tokens (read-write
// and read-only) send each attack in turn. A row per attack: the victim's
// p99 under attack against its quiet p99, and in the note the server CPU
// the attack cost, its peak RSS growth, the victim's p50s, the writes
// acknowledged and lost so far, whether the process lived, what the
// server answered, and how the attack breaks the goal (abuse.Goal: 2 s of
// CPU per request, 256 MiB of peak RSS, p99 within 2× of quiet, no
// acknowledged write lost, the process alive). Goal misses are figures,
// not bench failures; a harness that cannot run is one.
func benchAbuse(ctx context.Context, cfg config, tmp string, r *report) error {
	sizes, opts := abuse.Bench, abuse.Options{}
	if cfg.name == "smoke" {
		sizes = abuse.Sizes{Chars: 2_000, ListItems: 2_000, MapKeys: 2_000, Depth: 100, Changes: 20,
			Conns: 2, BatchCalls: 100, Huge: 8 << 20, Slow: 300 * time.Millisecond}
		opts = abuse.Options{Quiet: time.Second, Window: 300 * time.Millisecond, SettleTimeout: 5 * time.Second, AttackTimeout: 10 * time.Second}
	}
	dir, err := os.MkdirTemp(tmp, "abuse-")
	if err != nil {
		return err
	}
	bin, err := buildEngram(ctx, dir)
	if err != nil {
		return err
	}
	opts.Dir = dir
	opts.Command = func(db string) *exec.Cmd {
		return exec.Command(bin, "--db", db, "--json", "serve", "--addr", "127.0.0.1:0")
	}
	opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: abuse: "+format+"\n", args...) }
	h, err := abuse.Start(ctx, &opts)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			h.Close()
		}
	}()
	var runErr error
	for _, a := range abuse.Attacks(sizes) {
		if cfg.name == "smoke" && !slices.Contains(smokeAttacks, a.Key) {
			continue
		}
		res := h.Run(ctx, a)
		if res.Err != nil {
			r.add(row{Section: abuseSection, Comparison: a.Name, Note: "ERROR: " + res.Err.Error()})
			runErr = fmt.Errorf("%s: %w", a.Name, res.Err)
			continue
		}
		r.add(abuseRow(res))
	}
	closed = true
	f, err := h.Close()
	if err != nil {
		return err
	}
	alive := "alive at the end"
	if !f.Alive {
		alive = "not alive at the end: " + f.Exit
	}
	r.add(row{Section: abuseSection, Comparison: "serve under abuse: the whole run",
		Note: fmt.Sprintf("victim: %d calls, %d writes acknowledged, %d lost; server started again %d times after dying or staying busy; %s",
			f.Victim.Calls, f.Acked, f.Lost, f.Restarts, alive)})
	return runErr
}

// smokeAttacks are the attacks -smoke runs, one of each kind of
// client the harness has (a /sync peer, several, a raw MCP session), so
// that the section keeps working; its figures mean nothing at those sizes.
var smokeAttacks = []string{"sync-insert", "sync-many-connections", "mcp-batch-2025-03-26", "mcp-read-nul-uri"}

// abuseSlack is added to twice the victim's quiet p99 before a row
// says the goal is missed: scheduler noise on a shared machine (the
// ratio column is the bare ratio).
const abuseSlack = 50 * time.Millisecond

// abuseRow is one attack's row: victim p99 under attack vs quiet.
func abuseRow(res abuse.Result) row {
	x := row{Section: abuseSection, Comparison: res.Name, Engram: ms(res.Attacked.P99), Baseline: ms(res.Quiet.P99),
		Unit: unitMS, Better: "lower", Ratio: res.Ratio()}
	alive := "alive"
	if !res.Alive {
		alive = "DIED (" + firstLine(res.Exit) + ")"
	}
	if res.Killed != "" {
		alive += "; killed by the harness: " + res.Killed
	}
	x.Note = fmt.Sprintf("server CPU %.2f s, peak RSS +%.0f MiB; victim p50 %s → %s, max %s, over %d calls; writes %d acked, %d lost; %s; %s sent; answer: %s",
		res.CPU.Seconds(), float64(res.PeakGrowth)/(1<<20),
		formatValue(ms(res.Quiet.P50), unitMS), formatValue(ms(res.Attacked.P50), unitMS), formatValue(ms(res.Attacked.Max), unitMS), res.Attacked.Calls,
		res.Acked, res.Lost, alive, sizeOf(res.Bytes), res.Outcome)
	limits := abuse.Goal
	limits.Slack = abuseSlack
	if v := res.Violations(limits); len(v) > 0 {
		x.Verdict = "loss"
		x.Note = "GOAL MISSED: " + strings.Join(v, "; ") + ". " + x.Note
	} else {
		x.Verdict = "win"
		x.Note = "goal holds. " + x.Note
	}
	return x
}

func sizeOf(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
