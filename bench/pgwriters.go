package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// Writers in several processes on one PostgreSQL database: the bench
// re-executes itself (pgWriterEnv names the child's part) so that each
// process has its own store, pool and caches, as separate services would.

// pgWriterEnv holds a child's part: "engram" (small appends, each writer
// to its own agent's block), "messages" and "archival" (each writer a
// message or an archival entry to its own agent), "bare"
// (single-row INSERT transactions) or "big" (appends of 256 KiB chunks
// until stdin closes).
const pgWriterEnv = "ENGRAM_BENCH_PGWRITER"

// childProfileEnv, when set (by -cpuprofile FILE), has each writer process
// write its own CPU profile to FILE.PART-PID.
const childProfileEnv = "ENGRAM_BENCH_CHILD_CPUPROFILE"

// pgWriterChild runs the child's part when the bench was started as one;
// false when it was not.
func pgWriterChild() bool {
	part := os.Getenv(pgWriterEnv)
	if part == "" {
		return false
	}
	if prof := os.Getenv(childProfileEnv); prof != "" {
		f, err := os.Create(fmt.Sprintf("%s.%s-%d", prof, part, os.Getpid()))
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := runPGWriterChild(part); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "pgwriter:", err)
		os.Exit(1)
	}
	return true
}

func runPGWriterChild(part string) error {
	ctx := context.Background()
	dsn := os.Getenv("ENGRAM_BENCH_DSN")
	proc := os.Getenv("ENGRAM_BENCH_PROC")
	writers, _ := strconv.Atoi(os.Getenv("ENGRAM_BENCH_WRITERS"))
	ops, _ := strconv.Atoi(os.Getenv("ENGRAM_BENCH_OPS"))
	in := bufio.NewReader(os.Stdin)
	var op func(w, i int) error
	switch part {
	case "engram", "big", "messages", "archival":
		st, err := memory.Open(ctx, dsn, &memory.Options{BusyTimeout: time.Minute, TextCacheBytes: -1})
		if err != nil {
			return err
		}
		defer st.Close()
		agent := func(w int) string { return fmt.Sprintf("agent-%s-%d", proc, w) }
		line := func(w, i int) string {
			return fmt.Sprintf("note %d of writer %d: the tide turned at the harbour", i, w)
		}
		switch part {
		case "messages":
			op = func(w, i int) error {
				_, err := st.Agent(agent(w)).Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: line(w, i), BatchID: "session"})
				return err
			}
		case "archival":
			op = func(w, i int) error {
				_, err := st.Agent(agent(w)).Archival().Insert(ctx, memory.ArchivalEntry{Content: line(w, i)})
				return err
			}
		case "big":
			chunk := strings.Repeat("0123456789abcdef", 256<<10/16)
			block, n := 0, 0
			op = func(w, i int) error {
				if n++; block == 0 || n > 3 { // a fresh block each 3 chunks (the char limit: 1 MiB)
					block, n = block+1, 1
					if _, err := st.Agent(agent(w)).CreateBlock(ctx, memory.BlockSpec{Label: fmt.Sprint("big", os.Getpid(), "-", block), CharLimit: 1 << 20}); err != nil {
						return err
					}
				}
				return st.Agent(agent(w)).Block(fmt.Sprint("big", os.Getpid(), "-", block)).Append(ctx, chunk)
			}
		default:
			for w := range writers {
				if _, err := st.Agent(agent(w)).CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
					return err
				}
			}
			op = func(w, i int) error {
				return st.Agent(agent(w)).Block("notes").Append(ctx, line(w, i)+"\n")
			}
		}
	case "bare":
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		db.SetMaxOpenConns(writers)
		db.SetMaxIdleConns(writers)
		data := []byte(strings.Repeat("x", 60))
		p, _ := strconv.Atoi(proc)
		op = func(w, i int) error {
			_, err := db.ExecContext(ctx, `INSERT INTO u VALUES ($1, $2, $3)`, p*1000+w, i, data)
			return err
		}
	default:
		return fmt.Errorf("unknown part %q", part)
	}
	// A first write per writer (connections, prepared statements) before
	// the start.
	for w := range writers {
		if err := op(w, -1-w); err != nil {
			return err
		}
	}
	fmt.Println("READY")
	if _, err := in.ReadString('\n'); err != nil {
		return err
	}
	if part == "big" {
		stop := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, in); close(stop) }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				fmt.Println("DONE", i)
				return nil
			default:
			}
			if err := op(0, i); err != nil {
				return err
			}
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ops {
				if errs[w] = op(w, i); errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Println("DONE", writers*ops)
	return nil
}

// pgChildren are writer processes started and held at their start line.
type pgChildren struct {
	cmds []*exec.Cmd
	ins  []io.WriteCloser
	outs []*bufio.Reader
	errs []*strings.Builder
}

// startPGChildren starts procs children of part, each with writers
// writers of ops writes, and waits until all are ready.
func startPGChildren(dsn, part string, procs, writers, ops int) (*pgChildren, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &pgChildren{}
	for p := range procs {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), pgWriterEnv+"="+part, "ENGRAM_BENCH_DSN="+dsn, "ENGRAM_BENCH_PROC="+strconv.Itoa(p),
			"ENGRAM_BENCH_WRITERS="+strconv.Itoa(writers), "ENGRAM_BENCH_OPS="+strconv.Itoa(ops))
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		errb := &strings.Builder{}
		cmd.Stderr = errb
		if err := cmd.Start(); err != nil {
			c.kill()
			return nil, err
		}
		c.cmds, c.ins, c.outs, c.errs = append(c.cmds, cmd), append(c.ins, in), append(c.outs, bufio.NewReader(out)), append(c.errs, errb)
	}
	for p := range c.cmds {
		if _, err := c.line(p, "READY"); err != nil {
			c.kill()
			return nil, err
		}
	}
	return c, nil
}

// line reads child p's next line, which must start with want; it returns
// the rest.
func (c *pgChildren) line(p int, want string) (string, error) {
	l, err := c.outs[p].ReadString('\n')
	if err != nil || !strings.HasPrefix(l, want) {
		return "", fmt.Errorf("writer process %d: %q, %v: %s", p, l, err, c.errs[p])
	}
	return strings.TrimSpace(strings.TrimPrefix(l, want)), nil
}

// start lets every child go.
func (c *pgChildren) start() error {
	for _, in := range c.ins {
		if _, err := io.WriteString(in, "GO\n"); err != nil {
			return err
		}
	}
	return nil
}

// wait reads each child's DONE and the writes it reports, and reaps it.
func (c *pgChildren) wait() (int, error) {
	total := 0
	for p, cmd := range c.cmds {
		n, err := c.line(p, "DONE")
		if err != nil {
			c.kill()
			return 0, err
		}
		k, _ := strconv.Atoi(n)
		total += k
		c.ins[p].Close()
		if err := cmd.Wait(); err != nil {
			return 0, fmt.Errorf("writer process %d: %w: %s", p, err, c.errs[p])
		}
	}
	return total, nil
}

func (c *pgChildren) kill() {
	for _, cmd := range c.cmds {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
}

// pgWriterThroughput runs procs × writers children of part (each writer
// ops writes) on a new database and returns the writes per second, from
// the start signal to the last child's end.
func pgWriterThroughput(ctx context.Context, newDB func() (string, error), part string, procs, writers, ops int) (float64, error) {
	dsn, err := newDB()
	if err != nil {
		return 0, err
	}
	if part == "bare" {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return 0, err
		}
		_, err = db.ExecContext(ctx, `CREATE TABLE u (writer BIGINT, seq BIGINT, data BYTEA, PRIMARY KEY (writer, seq))`)
		db.Close()
		if err != nil {
			return 0, err
		}
	} else {
		// Migrated before the writers open it (one process migrates a
		// fresh database; the rest wait for it).
		st, err := memory.Open(ctx, dsn, nil)
		if err != nil {
			return 0, err
		}
		st.Close()
	}
	c, err := startPGChildren(dsn, part, procs, writers, ops)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := c.start(); err != nil {
		c.kill()
		return 0, err
	}
	n, err := c.wait()
	if err != nil {
		return 0, err
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// benchPostgresWriters: writers on different blocks in several processes
// against bare single-row INSERT transactions of the same concurrency on
// the same server (8 in 2 processes, 32 in 4), and a small append's p99
// beside a process appending 256 KiB chunks to blocks of its own, against
// the same appends on a quiet server.
func benchPostgresWriters(ctx context.Context, cfg config, r *report) error {
	const sec = "postgres"
	base, stop, err := benchServer(true)
	if err != nil {
		return err
	}
	if base == nil {
		r.add(row{Section: sec, Comparison: "PostgreSQL writers in several processes", Note: "skipped: " + stop.why})
		return nil
	}
	defer stop.fn()
	seq := 0
	newDB := func() (string, error) {
		seq++
		return pgtest.DatabaseURL(base, fmt.Sprintf("engram_writers_%d_%d", os.Getpid(), seq))
	}
	ops := max(25, cfg.appendConcOps/8)
	for _, shape := range []struct{ procs, writers int }{{2, 4}, {4, 8}} {
		n := shape.procs * shape.writers
		per := max(10, ops*8/n)
		var eng, bare []float64
		for range cfg.repeats {
			e, err := pgWriterThroughput(ctx, newDB, "engram", shape.procs, shape.writers, per)
			if err != nil {
				return fmt.Errorf("engram writers: %w", err)
			}
			b, err := pgWriterThroughput(ctx, newDB, "bare", shape.procs, shape.writers, per)
			if err != nil {
				return fmt.Errorf("bare writers: %w", err)
			}
			eng, bare = append(eng, e), append(bare, b)
		}
		r.compare(sec, fmt.Sprintf("PostgreSQL %d writers on different blocks in %d processes: engram vs bare INSERT", n, shape.procs),
			median(eng), median(bare), unitOps, "higher",
			fmt.Sprintf("each writer appends a line to its own agent's block (%d each); bare: single-row INSERT transactions, as many at once", per))
	}

	// The same block appends through PgBouncer in transaction mode (each
	// transaction on whichever server connection is free), against the
	// same writers connected directly with the same exec mode (what the
	// pooler costs), and those against the default mode (what naming no
	// statement costs: the server parses and plans each), in turn.
	if pooler, stopPooler, err := pgtest.LaunchPooler(base); err != nil {
		r.add(row{Section: sec, Comparison: "PostgreSQL 8 writers through PgBouncer", Note: "skipped: " + err.Error()})
	} else {
		pooledDB := func() (string, error) {
			dsn, err := newDB()
			if err != nil {
				return "", err
			}
			return pgtest.PooledURL(pooler, dsn)
		}
		execDB := func() (string, error) {
			dsn, err := newDB()
			if err != nil {
				return "", err
			}
			u, err := url.Parse(dsn)
			if err != nil {
				return "", err
			}
			q := u.Query()
			q.Set("default_query_exec_mode", "exec")
			u.RawQuery = q.Encode()
			return u.String(), nil
		}
		per := max(10, ops)
		var pooled, direct, named []float64
		for range cfg.repeats {
			for _, m := range []struct {
				db  func() (string, error)
				out *[]float64
			}{{pooledDB, &pooled}, {execDB, &direct}, {newDB, &named}} {
				v, err := pgWriterThroughput(ctx, m.db, "engram", 2, 4, per)
				if err != nil {
					stopPooler()
					return fmt.Errorf("engram writers (pooler comparison): %w", err)
				}
				*m.out = append(*m.out, v)
			}
		}
		stopPooler()
		note := fmt.Sprintf("each writer appends a line to its own agent's block (%d each)", per)
		r.compare(sec, "PostgreSQL 8 writers on different blocks in 2 processes, default_query_exec_mode=exec: through PgBouncer (transaction mode) vs direct",
			median(pooled), median(direct), unitOps, "higher", note)
		r.compare(sec, "PostgreSQL 8 writers on different blocks in 2 processes, direct: default_query_exec_mode=exec vs the default (named statements)",
			median(direct), median(named), unitOps, "higher", note+"; exec, which a pooler without prepared statements needs, has the server parse and plan each statement")
	}

	// An agent's messages and archival entries: row inserts with their
	// full-text upkeep, no CRDT work (8 writers in 2 processes).
	per := max(10, ops)
	for _, part := range []string{"messages", "archival"} {
		var eng, bare []float64
		for range cfg.repeats {
			e, err := pgWriterThroughput(ctx, newDB, part, 2, 4, per)
			if err != nil {
				return fmt.Errorf("%s writers: %w", part, err)
			}
			b, err := pgWriterThroughput(ctx, newDB, "bare", 2, 4, per)
			if err != nil {
				return fmt.Errorf("bare writers: %w", err)
			}
			eng, bare = append(eng, e), append(bare, b)
		}
		what := map[string]string{"messages": "a message to its agent's batch", "archival": "an archival entry"}[part]
		r.compare(sec, fmt.Sprintf("PostgreSQL 8 writers of %s in 2 processes: engram vs bare INSERT", part),
			median(eng), median(bare), unitOps, "higher",
			fmt.Sprintf("each writer appends %s (%d each); bare: single-row INSERT transactions, as many at once", what, per))
	}

	// Archival entries until the table is large, in a new database: the
	// writers' sessions plan on an empty table, and a plan kept from then
	// must not read the whole table on each insert.
	{
		const long = 1000
		var eng, bare []float64
		for range cfg.repeats {
			e, err := pgWriterThroughput(ctx, newDB, "archival", 2, 4, long)
			if err != nil {
				return fmt.Errorf("archival writers: %w", err)
			}
			b, err := pgWriterThroughput(ctx, newDB, "bare", 2, 4, long)
			if err != nil {
				return fmt.Errorf("bare writers: %w", err)
			}
			eng, bare = append(eng, e), append(bare, b)
		}
		r.compare(sec, "PostgreSQL 8 writers of archival in 2 processes, 8,000 entries into a new database: engram vs bare INSERT",
			median(eng), median(bare), unitOps, "higher",
			fmt.Sprintf("each writer inserts %d archival entries; bare: single-row INSERT transactions, as many at once", long))
	}

	// A small append's p99, quiet and beside a 256 KiB writer.
	dsn, err := newDB()
	if err != nil {
		return err
	}
	quiet, loaded, appends, err := bigWriterP99(ctx, cfg, dsn)
	if err != nil {
		return err
	}
	r.compare(sec, "PostgreSQL small append p99 beside a 256 KiB-chunk writer vs quiet", median(loaded), median(quiet), unitMS, "lower",
		fmt.Sprintf("%d appends of a line to one block; the writer, another process, appends 256 KiB chunks to its own blocks", appends))
	return nil
}

// bigWriterP99 measures a small append's p99 on the store at dsn (a
// PostgreSQL URL or a SQLite file), quiet and beside another process
// appending 256 KiB chunks to blocks of its own: the p99 of each repeat,
// and the appends timed per repeat.
func bigWriterP99(ctx context.Context, cfg config, dsn string) (quiet, loaded []float64, appends int, err error) {
	st, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	defer st.Close()
	if _, err := st.Agent("small").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		return nil, nil, 0, err
	}
	appends = max(100, cfg.appendOps)
	measure := func() ([]time.Duration, error) {
		ds := make([]time.Duration, appends)
		for i := range ds {
			t := time.Now()
			if err := st.Agent("small").Block("notes").Append(ctx, fmt.Sprintf("note %d\n", i)); err != nil {
				return nil, err
			}
			ds[i] = time.Since(t)
			if i%400 == 399 {
				// A fresh block now and then: the latency is the write's,
				// not the block's growing size.
				if err := st.Agent("small").Block("notes").SetText(ctx, ""); err != nil {
					return nil, err
				}
			}
		}
		return ds, nil
	}
	for range cfg.repeats {
		ds, err := measure()
		if err != nil {
			return nil, nil, 0, err
		}
		quiet = append(quiet, percentile(ds, 0.99))
		big, err := startPGChildren(dsn, "big", 1, 1, 0)
		if err != nil {
			return nil, nil, 0, err
		}
		if err := big.start(); err != nil {
			big.kill()
			return nil, nil, 0, err
		}
		time.Sleep(200 * time.Millisecond) // the big writer under way
		ds, err = measure()
		for _, in := range big.ins {
			in.Close()
		}
		chunks, werr := big.wait()
		if err != nil {
			return nil, nil, 0, err
		}
		if werr != nil {
			return nil, nil, 0, werr
		}
		if chunks == 0 {
			return nil, nil, 0, errors.New("the 256 KiB writer wrote nothing")
		}
		loaded = append(loaded, percentile(ds, 0.99))
	}
	return quiet, loaded, appends, nil
}
