package main

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/engram-go/engram/memory"
)

// benchConsolidate measures what keeping archival memory clean costs:
// InsertArchival's p50 with write-time deduplication (the default) against
// Options.KeepDuplicates (the baseline: every write stored), and one
// consolidation round (a dry run: detection only) over 10,000 entries of
// which a tenth are light variants of another.
func benchConsolidate(ctx context.Context, cfg config, tmp string, r *report) error {
	n := 10000
	inserts := 2000
	if cfg.name == "smoke" {
		n, inserts = 1000, 200
	}
	rng := rand.New(rand.NewSource(1))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	text := func() string {
		w := make([]string, 12+rng.Intn(20))
		for j := range w {
			w[j] = vocab[rng.Intn(len(vocab))]
		}
		return strings.Join(w, " ") + "."
	}
	p50 := func(keep bool, name string) (float64, error) {
		s, err := memory.Open(ctx, filepath.Join(tmp, name+".db"), &memory.Options{KeepDuplicates: keep})
		if err != nil {
			return 0, err
		}
		defer s.Close()
		ds := make([]time.Duration, 0, inserts)
		for range inserts {
			c := text()
			t := time.Now()
			if _, err := s.Agent("bench").Archival().Insert(ctx, memory.ArchivalEntry{Content: c}); err != nil {
				return 0, err
			}
			ds = append(ds, time.Since(t))
		}
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000, nil
	}
	// Alternate the two so that neither gets a warmer machine.
	var dedup, keep []float64
	for i := range max(cfg.repeats, 1) {
		k, err := p50(true, fmt.Sprintf("keep%d", i))
		if err != nil {
			return err
		}
		d, err := p50(false, fmt.Sprintf("dedup%d", i))
		if err != nil {
			return err
		}
		dedup, keep = append(dedup, d), append(keep, k)
	}
	slices.Sort(dedup)
	slices.Sort(keep)
	r.add(row{Section: "consolidate", Comparison: "InsertArchival p50: dedup vs KeepDuplicates", Engram: dedup[len(dedup)/2], Baseline: keep[len(keep)/2],
		Unit: "ms", Better: "lower", Note: fmt.Sprintf("%d inserts of distinct texts", inserts)})

	s, err := memory.Open(ctx, filepath.Join(tmp, "round.db"), &memory.Options{KeepDuplicates: true})
	if err != nil {
		return err
	}
	defer s.Close()
	in := make([]memory.ArchivalEntry, n)
	for i := range in {
		if i%10 == 9 {
			in[i] = memory.ArchivalEntry{Content: strings.ToUpper(in[i-1].Content) + "!"}
			continue
		}
		in[i] = memory.ArchivalEntry{Content: text()}
	}
	if _, err := s.Agent("bench").Archival().InsertBatch(ctx, in, nil); err != nil {
		return err
	}
	t := time.Now()
	rep, err := s.Agent("bench").Archival().Consolidate(ctx, &memory.ConsolidateOptions{DryRun: true, MaxEntries: n})
	if err != nil {
		return err
	}
	d := time.Since(t)
	if len(rep.Clusters) != n/10 {
		return fmt.Errorf("consolidate: %d clusters in %d entries, want %d", len(rep.Clusters), n, n/10)
	}
	r.add(row{Section: "consolidate", Comparison: fmt.Sprintf("round over %d entries (dry run)", n), Engram: float64(d.Milliseconds()), Baseline: 5000,
		Unit: "ms", Better: "lower", Note: "baseline: the 5 s budget"})
	return nil
}
