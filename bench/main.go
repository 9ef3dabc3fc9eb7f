// Command bench compares engram with peer libraries and bare baselines on
// identical data, in one process, and prints one table of ratios.
//
//	cd bench && go run . -quick      # under 2 minutes on 2 cores
//	cd bench && go run .             # full sizes
//	cd bench && go run . -smoke      # a few seconds; CI runs it
//	cd bench && go run . -json       # machine-readable output
//
// It is its own module (github.com/engram-go/engram/bench, with a replace
// directive pointing at the library) so bleve, chromem-go and friends never
// enter the library's dependency list. See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/eval"
	sqlitebackend "github.com/engram-go/engram/memory/sqlite"
)

// config holds the sizes of one run (-smoke, -quick or full).
type config struct {
	name    string
	repeats int // repeats of every timing; medians are reported

	// 1. Cranfield.
	cranDocs         int // 0 = all
	cranQueries      int // 0 = all (quality)
	cranTimedQueries int // 0 = all; else an even sample for latency

	// 2. Vector KNN.
	knnSizes   []int
	knnDims    int
	knnQueries int

	// 3. Append.
	appendOps     int // serial appends per repeat
	appendWriters int
	appendConcOps int // appends per repeat across all writers

	// 4. Context build.
	buildIters      int // warm builds per repeat
	buildColdBlocks int

	// 5. CRDT.
	crdtAppends int // total, split over two replicas

	// 6. History.
	historyRewrites   []int // checkpoints (cumulative one-line rewrites) for cold loads
	historyAppends    int   // appends per repeat to each block size
	historyLargeChars int   // the large block's size
}

func configFor(smoke, quick bool) config {
	switch {
	case smoke:
		return config{name: "smoke", repeats: 1,
			cranDocs: 200, cranQueries: 25,
			knnSizes: []int{1_000}, knnDims: 384, knnQueries: 20,
			appendOps: 100, appendWriters: 8, appendConcOps: 160,
			buildIters: 20, buildColdBlocks: 50,
			crdtAppends:     400,
			historyRewrites: []int{200, 600}, historyAppends: 50, historyLargeChars: 20_000}
	case quick:
		return config{name: "quick", repeats: 3, cranTimedQueries: 75,
			knnSizes: []int{10_000, 50_000}, knnDims: 384, knnQueries: 30,
			appendOps: 600, appendWriters: 8, appendConcOps: 800,
			buildIters: 200, buildColdBlocks: 1_000,
			crdtAppends:     10_000,
			historyRewrites: []int{1_000, 5_000, 10_000, 20_000}, historyAppends: 200, historyLargeChars: 140_000}
	default:
		return config{name: "full", repeats: 5,
			knnSizes: []int{10_000, 100_000}, knnDims: 384, knnQueries: 100,
			appendOps: 2_000, appendWriters: 8, appendConcOps: 2_400,
			buildIters: 1_000, buildColdBlocks: 1_000,
			crdtAppends:     10_000,
			historyRewrites: []int{1_000, 5_000, 10_000, 20_000}, historyAppends: 500, historyLargeChars: 140_000}
	}
}

func main() {
	if pgWriterChild() {
		return // a writer process of the postgres section
	}
	smoke := flag.Bool("smoke", false, "tiny sizes, a few seconds (CI)")
	quick := flag.Bool("quick", false, "reduced sizes, under 2 minutes on 2 cores")
	jsonOut := flag.Bool("json", false, "print the results as JSON instead of a table")
	cranDir := flag.String("cranfield", "", "Cranfield collection directory (default: internal/eval.FindCranfield)")
	only := flag.String("only", "", "comma-separated subset of: search,knn,append,build,crdt,history,postgres,pgwriters,serve,\"serve under abuse\",agents,locomo,consolidate")
	repeats := flag.Int("repeats", 0, "override the number of repeats")
	agentEngines := flag.String("agents-engines", "sqlite,postgres", "the agents section's engines: sqlite, postgres or both")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer pprof.StopCPUProfile()
		// Writer processes profile themselves into FILE.PART-PID.
		os.Setenv(childProfileEnv, *cpuProfile)
	}

	cfg := configFor(*smoke, *quick)
	if *repeats > 0 {
		cfg.repeats = *repeats
	}
	dir := *cranDir
	if dir == "" {
		dir = eval.FindCranfield()
	}
	want := func(name string) bool {
		if *only == "" {
			return true
		}
		for _, s := range strings.Split(*only, ",") {
			if strings.TrimSpace(s) == name {
				return true
			}
		}
		return false
	}

	tmp, err := os.MkdirTemp("", "engram-bench-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(tmp)

	ctx := context.Background()
	r := &report{Mode: cfg.name}
	progress := io.Writer(os.Stderr)
	start := time.Now()
	run := func(name string, f func() error) {
		if !want(name) {
			return
		}
		t := time.Now()
		fmt.Fprintf(progress, "bench: %s ...\n", name)
		if err := f(); err != nil {
			r.add(row{Section: name, Comparison: name, Note: "ERROR: " + err.Error()})
			fmt.Fprintf(progress, "bench: %s failed: %v\n", name, err)
			r.Failed = true
		}
		fmt.Fprintf(progress, "bench: %s done in %v\n", name, time.Since(t).Round(time.Millisecond))
	}
	run("search", func() error { return benchCranfield(ctx, cfg, dir, tmp, r) })
	run("knn", func() error { return benchKNN(ctx, cfg, tmp, r) })
	run("append", func() error { return benchAppend(ctx, cfg, tmp, r) })
	run("build", func() error { return benchBuild(ctx, cfg, tmp, r) })
	run("crdt", func() error { return benchCRDT(cfg, r) })
	run("history", func() error { return benchHistory(ctx, cfg, tmp, r) })
	run("postgres", func() error { return benchPostgres(ctx, cfg, dir, tmp, r) })
	run("pgwriters", func() error { return benchPostgresWriters(ctx, cfg, r) })
	run("serve", func() error { return benchServe(ctx, cfg, tmp, r) })
	run("locomo", func() error { return benchLoCoMo(ctx, cfg, tmp, r) })
	run("consolidate", func() error { return benchConsolidate(ctx, cfg, tmp, r) })
	if cfg.name != "quick" || *only != "" {
		// Its attacks take minutes where they succeed (a minute and a
		// half for each that keeps the server busy): in -quick it runs
		// when named.
		run(abuseSection, func() error { return benchAbuse(ctx, cfg, tmp, r) })
	}
	if cfg.name != "quick" || *only != "" {
		// Building 100 agents' stores takes most of -quick's two minutes:
		// there it runs when named (-only agents).
		run("agents", func() error {
			if strings.Contains(*agentEngines, "sqlite") {
				if err := benchAgents(ctx, cfg, tmp, r); err != nil {
					return err
				}
			}
			if strings.Contains(*agentEngines, "postgres") {
				return benchAgentsPostgres(ctx, cfg, r)
			}
			return nil
		})
	}

	r.Machine = machine{
		NumCPU:     runtime.NumCPU(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		GoVersion:  runtime.Version(),
		SQLite:     sqlitebackend.DriverModule,
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPU:        cpuModel(),
	}
	r.Elapsed = time.Since(start).Round(time.Millisecond).String()
	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fatal(err)
		}
	} else {
		r.print(os.Stdout)
	}
	if r.Failed {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// cpuModel reads the CPU model name on Linux ("" elsewhere).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
