package builder_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// BenchmarkAgentsStore measures what one agent's operations cost in a
// SQLite store of N agents (20 blocks, 200 archival entries and 200
// messages each, one Zipf vocabulary): an agent's first search in a
// process (its partitions load), archival and over all types, and a warm
// Build. Each should cost what the agent's own rows cost, whatever N is:
// the sub-benchmarks report p50 per N, to compare N=10 with N=1,000 in one
// run.
//
//	ENGRAM_AGENTS_N=10,1000 go test -run '^$' -bench AgentsStore -benchtime 1x ./builder
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
	for _, n := range ns {
		path := filepath.Join(dir, fmt.Sprintf("agents-store-%d.db", n))
		queries, err := agentsStore(ctx, path, n)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			const sample = 40
			// Each sub-benchmark opens the store anew: every sampled
			// agent's search is its first in the process.
			first := func(b *testing.B, search func(a *memory.Agent, q string) error) {
				st, err := memory.Open(ctx, path, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				warm(b, st, func() error { return search(st.Agent(agentName(n-1)), queries[0]) })
				var ds []time.Duration
				for range b.N {
					for i := range min(sample, n-1) {
						a := st.Agent(agentName((i * 7919) % (n - 1)))
						start := time.Now()
						if err := search(a, queries[i%len(queries)]); err != nil {
							b.Fatal(err)
						}
						ds = append(ds, time.Since(start))
					}
					b.StopTimer()
					st.Close()
					if st, err = memory.Open(ctx, path, nil); err != nil {
						b.Fatal(err)
					}
					warm(b, st, func() error { return search(st.Agent(agentName(n-1)), queries[0]) })
					b.StartTimer()
				}
				reportP50(b, ds)
			}
			b.Run("first-SearchArchival", func(b *testing.B) {
				first(b, func(a *memory.Agent, q string) error {
					_, err := a.Archival().Search(ctx, q, nil)
					return err
				})
			})
			b.Run("first-Search", func(b *testing.B) {
				first(b, func(a *memory.Agent, q string) error {
					_, err := a.Search(ctx, q, nil)
					return err
				})
			})
			b.Run("warm-Build", func(b *testing.B) {
				st, err := memory.Open(ctx, path, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				bl := builder.New(st, builder.ContextConfig{Cache: builder.NewCache()}).
					ForAgent(agentName(n / 2)).WithMessages(st).WithActiveBatch("b1")
				if _, err := bl.Build(ctx); err != nil {
					b.Fatal(err)
				}
				var ds []time.Duration
				for range b.N {
					for range 100 {
						start := time.Now()
						if _, err := bl.Build(ctx); err != nil {
							b.Fatal(err)
						}
						ds = append(ds, time.Since(start))
					}
				}
				reportP50(b, ds)
			})
		})
	}
}

// warm readies a newly opened store as a process that has searched
// before: its text cache built (a whole copy) or gone partial, and one
// search of another agent run (what every process pays once, statistics
// and statements, is not any agent's first search).
func warm(b *testing.B, st *memory.Cache, first func() error) {
	if err := st.Index().WarmTextCache(context.Background()); err != nil && !errors.Is(err, search.ErrCacheBudget) {
		b.Fatal(err)
	}
	if err := first(); err != nil {
		b.Fatal(err)
	}
}

func reportP50(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e6, "p50-ms")
	b.ReportMetric(float64(ds[len(ds)*95/100].Nanoseconds())/1e6, "p95-ms")
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
