package builder_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// BenchmarkAgentsStore measures what one agent's operations cost in a
// SQLite store of N agents (20 blocks, 200 archival entries and 200
// messages each, one Zipf vocabulary): an agent's first search in a
// process (its partitions load, from its rows or, "-stored", from what
// an earlier process saved), archival and over all types, a resident
// agent's search after another agent's insert or delete, and a warm
// Build. Each should cost what the agent's own rows cost, whatever N is:
// each sub-benchmark times every N in turn (so that the machine's load
// weighs on each alike) and reports each N's p50 and the largest N's
// over the smallest's.
//
//	ENGRAM_AGENTS_N=10,1000 go test -run '^$' -bench AgentsStore -benchtime 3x ./builder
//
// ENGRAM_AGENTS_N (comma-separated, default 10,100) picks the store
// sizes; with ENGRAM_AGENTS_DIR set the stores are kept in that directory
// and reused (N=1,000 takes a few minutes to write).
func BenchmarkAgentsStore(b *testing.B) {
	ns := []int{10, 100}
	if s := os.Getenv("ENGRAM_AGENTS_N"); s != "" {
		ns = nil
		for _, f := range strings.Split(s, ",") {
			if n, err := strconv.Atoi(f); err == nil && n > 0 {
				ns = append(ns, n)
			}
		}
	}
	dir := os.Getenv("ENGRAM_AGENTS_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	ctx := context.Background()
	paths := make([]string, len(ns))
	var queries []string
	for i, n := range ns {
		paths[i] = filepath.Join(dir, fmt.Sprintf("agents-store-%d.db", n))
		var err error
		if queries, err = agentsStore(ctx, paths[i], n); err != nil {
			b.Fatal(err)
		}
	}
	// openAt opens the store of each N at its path in at, readied as a
	// process that has searched before (see warm).
	openWith := func(b *testing.B, at []string, o *memory.Options, first func(st *memory.Store, n int) error) []*memory.Store {
		sts := make([]*memory.Store, len(ns))
		for i, n := range ns {
			st, err := memory.Open(ctx, at[i], o)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			warm(b, st, func() error { return first(st, n) })
			if err := storeaccess.Index(st).WaitPrewarm(ctx); err != nil {
				b.Fatal(err)
			}
			sts[i] = st
		}
		return sts
	}
	openAt := func(b *testing.B, at []string, first func(st *memory.Store, n int) error) []*memory.Store {
		return openWith(b, at, nil, first)
	}
	// open opens every store.
	open := func(b *testing.B, first func(st *memory.Store, n int) error) []*memory.Store {
		return openAt(b, paths, first)
	}
	// copies opens a copy of every store, for sub-benchmarks that change
	// the stores.
	copies := func(b *testing.B) []*memory.Store {
		cps := make([]string, len(paths))
		for i, p := range paths {
			cps[i] = filepath.Join(b.TempDir(), filepath.Base(p))
			if err := copyFile(p, cps[i]); err != nil {
				b.Fatal(err)
			}
		}
		return openAt(b, cps, func(*memory.Store, int) error { return nil })
	}
	// interleaved times op on each store in turn, sample times (i: the
	// sample), so that the machine's load weighs on every N alike, and
	// reports each N's p50 and p95 and the last N's p50 over the first's.
	// before, if not nil, runs untimed ahead of each op.
	interleaved := func(b *testing.B, sts []*memory.Store, sample int, before, op func(st *memory.Store, n, i int) error) {
		// The op's thread's CPU time beside the wall clock: on a machine
		// others load, the wall clock measures them too. The process's
		// CPU time also counts work the op waits for on other goroutines
		// (and whatever else the process's goroutines did meanwhile).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ds := make([][]time.Duration, len(ns))
		cpu := make([][]time.Duration, len(ns))
		pcpu := make([][]time.Duration, len(ns)) // the whole process's
		for range b.N {
			for i := range sample {
				for j, n := range ns {
					if before != nil {
						if err := before(sts[j], n, i); err != nil {
							b.Fatal(err)
						}
					}
					start, c0, p0 := time.Now(), threadCPU(), processCPU()
					if err := op(sts[j], n, i); err != nil {
						b.Fatal(err)
					}
					ds[j] = append(ds[j], time.Since(start))
					cpu[j] = append(cpu[j], threadCPU()-c0)
					pcpu[j] = append(pcpu[j], processCPU()-p0)
				}
			}
		}
		p50 := func(ds []time.Duration) float64 {
			slices.Sort(ds)
			return float64(ds[len(ds)/2].Nanoseconds()) / 1e6
		}
		p50s, cpus, pcpus := make([]float64, len(ns)), make([]float64, len(ns)), make([]float64, len(ns))
		for j, n := range ns {
			p50s[j], cpus[j], pcpus[j] = p50(ds[j]), p50(cpu[j]), p50(pcpu[j])
			b.ReportMetric(p50s[j], fmt.Sprintf("N=%d-p50-ms", n))
			b.ReportMetric(cpus[j], fmt.Sprintf("N=%d-cpu-p50-ms", n))
			b.ReportMetric(pcpus[j], fmt.Sprintf("N=%d-proc-cpu-p50-ms", n))
		}
		b.ReportMetric(p50s[len(ns)-1]/p50s[0], "p50-ratio")
		b.ReportMetric(cpus[len(ns)-1]/cpus[0], "cpu-p50-ratio")
		b.ReportMetric(pcpus[len(ns)-1]/pcpus[0], "proc-cpu-p50-ratio")
	}
	// An agent's first search: each sample a different agent (N ≥ 10:
	// 9 agents' caches are whole, loaded by warm; larger stores, partial,
	// have never loaded that agent's partitions) over b.N ≤ N/40 rounds.
	// With stored, the agents' partitions are those an earlier process
	// loaded and saved (search_text_parts): it searched each sampled
	// agent and closed. Without, no process ever loaded them (the stored
	// parts of earlier runs are deleted first).
	//
	// With prewarm, the earlier process and the timed one prewarm
	// (memory.Options.Prewarm): the earlier one records what its cache
	// holds as it closes (the last sampled agents' partitions, as many as
	// the cache holds), and the timed one has loaded them before its
	// first search, as a server restarted would.
	//
	// With bound (TextCacheBytes), both processes' text caches hold less
	// than the sampled agents' partitions at every N, N = 10 included: each
	// sample loads its partitions at every N, so the ratio is what N adds
	// to a load of the agent's own rows.
	first := func(b *testing.B, stored, prewarm bool, bound int64, search func(a *memory.Agent, q string) error) {
		sampled := func(n, round, i int) string { return agentName(((round-1)*40 + i) % (n - 1)) }
		var o *memory.Options
		if prewarm || bound != 0 {
			o = &memory.Options{Prewarm: prewarm, TextCacheBytes: bound}
		}
		recorded := map[int][]string{} // with prewarm, the owners each store's record names
		for _, p := range paths {
			st, err := memory.Open(ctx, p, o)
			if err != nil {
				b.Fatal(err)
			}
			db := storeaccess.Backend(st).DB()
			if _, err := db.ExecContext(ctx, `DELETE FROM search_text_parts`); err != nil {
				b.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `DELETE FROM meta WHERE key = ?`, searchindex.MetaTextWarmSet); err != nil {
				b.Fatal(err)
			}
			if prewarm {
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
				if st, err = memory.Open(ctx, p, o); err != nil {
					b.Fatal(err)
				}
			}
			if stored {
				warm(b, st, func() error { return nil })
				n := ns[slices.Index(paths, p)]
				for round := 1; round <= b.N; round++ {
					for i := range 40 {
						if err := search(st.Agent(sampled(n, round, i)), queries[0]); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			if prewarm {
				n := ns[slices.Index(paths, p)]
				// (None when the cache held the whole store: every
				// agent is then resident.)
				if recorded[n], err = recordedOwners(ctx, p); err != nil {
					b.Fatalf("N = %d: read the warm set: %v", n, err)
				}
			}
		}
		sts := openWith(b, paths, o, func(st *memory.Store, n int) error { return search(st.Agent(agentName(n-1)), queries[0]) })
		round := 0
		interleaved(b, sts, 40, nil, func(st *memory.Store, n, i int) error {
			if i == 0 && n == ns[0] { // each round's first op
				round++
			}
			agent := sampled(n, round, i)
			if len(recorded[n]) > 0 { // an agent the last process held, as a restarted server's are
				agent = recorded[n][((round-1)*40+i)%len(recorded[n])]
			}
			return search(st.Agent(agent), queries[(round*40+i)%len(queries)])
		})
	}
	// The bound of the "-stored-partial" row, over all types: at N = 10
	// the 9 sampled agents' partitions (about 0.29 MB each, decoded from
	// their stored parts) exceed it, so the cache evicts each before its
	// next sample; at N = 1,000 it holds the store-wide statistics and a
	// few agents' partitions. (Over archival entries alone, about 0.12 MB
	// an agent, no one bound does both: one the 9 exceed leaves N = 1,000
	// too little room beside its statistics; docs/performance.md has the
	// figures.)
	const partialBound = 2 << 20
	for _, v := range []struct {
		name                     string
		stored, prewarm, partial bool
	}{{"", false, false, false}, {"-stored", true, false, false}, {"-prewarmed", true, true, false}, {"-stored-partial", true, false, true}} {
		if !v.partial {
			b.Run("first-SearchArchival"+v.name, func(b *testing.B) {
				first(b, v.stored, v.prewarm, 0, func(a *memory.Agent, q string) error {
					_, err := a.Archival().Search(ctx, q, nil)
					return err
				})
			})
		}
		var bound int64
		if v.partial {
			bound = partialBound
		}
		b.Run("first-Search"+v.name, func(b *testing.B) {
			first(b, v.stored, v.prewarm, bound, func(a *memory.Agent, q string) error {
				_, err := a.Search(ctx, q, nil)
				return err
			})
		})
	}
	b.Run("warm-Build", func(b *testing.B) {
		sts := open(b, func(*memory.Store, int) error { return nil })
		bls := map[*memory.Store]builder.Builder{}
		for j, n := range ns {
			a := sts[j].Agent(agentName(n / 2))
			bl := builder.New(a, builder.ContextConfig{Cache: builder.NewCache()}).
				WithMessages(a.Messages()).WithActiveBatch("b1")
			if _, err := bl.Build(ctx); err != nil {
				b.Fatal(err)
			}
			bls[sts[j]] = bl
		}
		interleaved(b, sts, 100, nil, func(st *memory.Store, _, _ int) error {
			_, err := bls[st].Build(ctx)
			return err
		})
	})
	// An agent's delete of one of its archival entries (its oldest; each
	// sample another agent), on copies of the stores.
	b.Run("archival-delete", func(b *testing.B) {
		sts := copies(b)
		interleaved(b, sts, 50, nil, func(st *memory.Store, n, i int) error {
			ar := st.Agent(agentName(i % n)).Archival()
			es, err := ar.List(ctx, &memory.ArchivalQuery{Limit: 1})
			if err != nil || len(es) == 0 {
				return errors.Join(err, errors.New("no entry to delete"))
			}
			return ar.Delete(ctx, es[0].ID)
		})
	})
	// A resident agent's archival search after another agent's write:
	// an insert, or a delete of its oldest entry (on copies of the
	// stores, which the deletes change). At N = 10 the cache holds every
	// agent and follows both; at N = 1,000 the deleting agent's partition
	// is loaded before its delete (that is the delete's cost), so that
	// the statistics follow the delete, and the search's catch-up reads
	// the rows the delete re-indexed and moves the statistics by them.
	for _, write := range []string{"insert", "delete"} {
		b.Run("resident-search-after-another-agents-"+write, func(b *testing.B) {
			sts := copies(b)
			for j, n := range ns {
				a := sts[j].Agent(agentName(n / 2))
				for range 3 { // resident, statistics read
					if _, err := a.Archival().Search(ctx, queries[0], nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			interleaved(b, sts, 50, func(st *memory.Store, n, i int) error {
				other := st.Agent(agentName((n/2 + 1 + i%(n-1)) % n)) // never the searcher
				if write == "insert" {
					_, err := other.Archival().Insert(ctx, memory.ArchivalEntry{Content: fmt.Sprint("one more entry ", i)})
					return err
				}
				es, err := other.Archival().List(ctx, &memory.ArchivalQuery{Limit: 1})
				if err != nil || len(es) == 0 {
					return errors.Join(err, errors.New("no entry to delete"))
				}
				return other.Archival().Delete(ctx, es[0].ID)
			}, func(st *memory.Store, n, i int) error {
				_, err := st.Agent(agentName(n/2)).Archival().Search(ctx, queries[i%len(queries)], nil)
				return err
			})
		})
	}
	// A warm build after another process wrote (here another store on
	// the same file, to another agent's block): the build's reads see the
	// database changed and read again what they memoized.
	b.Run("warm-Build-after-a-write", func(b *testing.B) {
		sts := open(b, func(*memory.Store, int) error { return nil })
		others := open(b, func(*memory.Store, int) error { return nil })
		bls := map[*memory.Store]builder.Builder{}
		other := map[*memory.Store]*memory.Store{}
		for j, n := range ns {
			a := sts[j].Agent(agentName(n / 2))
			bl := builder.New(a, builder.ContextConfig{Cache: builder.NewCache()}).
				WithMessages(a.Messages()).WithActiveBatch("b1")
			if _, err := bl.Build(ctx); err != nil {
				b.Fatal(err)
			}
			bls[sts[j]], other[sts[j]] = bl, others[j]
		}
		interleaved(b, sts, 50, func(st *memory.Store, _, i int) error {
			return other[st].Agent(agentName(0)).Block("block-0").SetText(ctx, fmt.Sprint("rewritten ", i))
		}, func(st *memory.Store, _, _ int) error {
			_, err := bls[st].Build(ctx)
			return err
		})
	})
}

// warm readies a newly opened store as a process that has searched
// before: its text cache built (a whole copy) or gone partial, and one
// search of another agent run (what every process pays once, statistics
// and statements, is not any agent's first search).
func warm(b *testing.B, st *memory.Store, first func() error) {
	if err := storeaccess.Index(st).WarmTextCache(context.Background()); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
		b.Fatal(err)
	}
	if err := first(); err != nil {
		b.Fatal(err)
	}
}

// threadCPU is the CPU time of the calling thread
// (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// processCPU is the CPU time of the whole process (user and system):
// work an operation waits for on another goroutine (a whole text cache
// catches up on its loader's) counts here, not in threadCPU.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// recordedOwners reads the owners the warm set recorded in the store at
// path names (searchindex.MetaTextWarmSet), most recently used first;
// none when nothing is recorded.
func recordedOwners(ctx context.Context, path string) ([]string, error) {
	st, err := memory.Open(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var raw string
	err = storeaccess.Backend(st).DB().QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, searchindex.MetaTextWarmSet).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var set []struct {
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal([]byte(raw), &set); err != nil {
		return nil, err
	}
	var owners []string
	for _, e := range set {
		if !slices.Contains(owners, e.Owner) {
			owners = append(owners, e.Owner)
		}
	}
	return owners, nil
}

func agentName(i int) string { return fmt.Sprintf("agent-%04d", i) }

// agentsStore writes n agents' rows to path unless it exists, and returns
// the queries (two words, one of them frequent).
func agentsStore(ctx context.Context, path string, n int) ([]string, error) {
	r := rand.New(rand.NewPCG(35, 7))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%sx%d", strings.Repeat("q", i%3), i)
	}
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
	text := func() string {
		w := make([]string, 12+r.IntN(30))
		for i := range w {
			w[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	var queries []string
	for i := range 60 {
		queries = append(queries, vocab[i%15]+" "+vocab[50+r.IntN(2000)])
	}
	if _, err := os.Stat(path); err == nil {
		return queries, nil
	}
	tmp := path + ".tmp"
	os.Remove(tmp)
	st, err := memory.Open(ctx, tmp, nil)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for a := range n {
		ag := st.Agent(agentName(a))
		for i := range 20 {
			if _, err := ag.CreateBlock(ctx, memory.BlockSpec{Label: "block-" + strconv.Itoa(i), Value: text(), Pinned: i < 10}); err != nil {
				return nil, err
			}
		}
		es := make([]memory.ArchivalEntry, 200)
		for i := range es {
			es[i] = memory.ArchivalEntry{Content: text()}
		}
		if _, err := ag.Archival().InsertBatch(ctx, es, nil); err != nil {
			return nil, err
		}
		ms := make([]memory.Message, 200)
		for i := range ms {
			ms[i] = memory.Message{Role: memory.RoleUser, BatchID: "b1", Content: text()}
		}
		if _, err := ag.Messages().AppendMany(ctx, ms); err != nil {
			return nil, err
		}
	}
	if _, err := st.Agent(agentName(0)).Search(ctx, "warm", search.NewOptions().ContentTypes(search.Blocks)); err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	return queries, os.Rename(tmp, path)
}

// copyFile copies the SQLite database at from (checkpointed: no WAL
// beside it) to to.
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}
