package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/engram-go/engram/memory"
)

// benchHistory: comparison 6, what a block's age costs. A block rewritten
// one line at a time for months must load as fast as a young one (history
// epochs), and one append must cost the same whatever the block's size.
func benchHistory(ctx context.Context, cfg config, tmp string, r *report) error {
	if err := benchHistoryLoad(ctx, cfg, tmp, r); err != nil {
		return err
	}
	return benchAppendBySize(ctx, cfg, tmp, r)
}

// historyLines is the block the rewrites edit: 20 note lines.
func historyLines() []string {
	lines := make([]string, 20)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %02d: the deploy schedule moved after the quota review", i)
	}
	return lines
}

// benchHistoryLoad times a cold GetBlock (fresh store) after 1k, 5k, 10k
// and 20k one-line rewrites of one 20-line Text block, against the 1k
// figure.
func benchHistoryLoad(ctx context.Context, cfg config, tmp string, r *report) error {
	const sec = "history"
	path := filepath.Join(tmp, "history.db")
	st, err := memory.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	lines := historyLines()
	if _, err := st.Agent("agent").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: strings.Join(lines, "\n")}); err != nil {
		st.Close()
		return err
	}
	coldLoad := func() (float64, int, error) {
		var ts []float64
		var chars int
		for range max(cfg.repeats, 3) {
			s, err := memory.Open(ctx, path, nil)
			if err != nil {
				return 0, 0, err
			}
			t := time.Now()
			doc, err := s.Agent("agent").Block("notes").Doc(ctx)
			if err != nil {
				s.Close()
				return 0, 0, err
			}
			ts = append(ts, ms(time.Since(t)))
			chars = doc.Size()
			if err := s.Close(); err != nil {
				return 0, 0, err
			}
		}
		return median(ts), chars, nil
	}
	done := 0
	var base float64
	for _, n := range cfg.historyRewrites {
		for ; done < n; done++ {
			i := done % len(lines)
			lines[i] = fmt.Sprintf("line %02d: rewrite %06d of the deploy schedule", i, done)
			if err := st.Agent("agent").Block("notes").SetText(ctx, strings.Join(lines, "\n")); err != nil {
				st.Close()
				return fmt.Errorf("rewrite %d: %w", done, err)
			}
		}
		if err := st.Close(); err != nil {
			return err
		}
		t, chars, err := coldLoad()
		if err != nil {
			return err
		}
		if base == 0 {
			base = t
		}
		r.time(sec, fmt.Sprintf("cold GetBlock after %s one-line rewrites vs after %s", count(n), count(cfg.historyRewrites[0])), t, base,
			fmt.Sprintf("%d-char block; goal: the last row ≤ 1.5×", chars))
		if st, err = memory.Open(ctx, path, nil); err != nil {
			return err
		}
	}
	return st.Close()
}

// benchAppendBySize times appends to a large Text block against the same
// appends to a 1k-character block.
func benchAppendBySize(ctx context.Context, cfg config, tmp string, r *report) error {
	const sec = "history"
	st, err := memory.Open(ctx, filepath.Join(tmp, "appendsize.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	plan, err := newAppendPlan("size", cfg.historyAppends, 11)
	if err != nil {
		return err
	}
	body := func(n int) string {
		var sb strings.Builder
		for i := 0; sb.Len() < n; i++ {
			sb.WriteString(plan.ops[i%len(plan.ops)].text)
		}
		return sb.String()[:n]
	}
	// A fresh block every perBlock appends: appending the whole plan to
	// one block (let alone every repeat to the same one) grows it by
	// thousands of characters, and the "1k" block would be measured at
	// many times that size.
	const perBlock = 20
	p50 := func(name string, size int) (float64, error) {
		var ls []latency
		blocks := 0
		for range cfg.repeats {
			ds := make([]time.Duration, 0, len(plan.ops))
			var label string
			for i, op := range plan.ops {
				if i%perBlock == 0 {
					label = fmt.Sprintf("%s-%d", name, blocks)
					blocks++
					if _, err := st.Agent("agent").CreateBlock(ctx, memory.BlockSpec{Label: label, CharLimit: size + 1<<16, Value: body(size)}); err != nil {
						return 0, err
					}
				}
				t := time.Now()
				if err := st.Agent("agent").Block(label).Append(ctx, op.text); err != nil {
					return 0, err
				}
				ds = append(ds, time.Since(t))
			}
			ls = append(ls, latencyOf(ds))
		}
		return medianLatency(ls).p50, nil
	}
	small, err := p50("small", 1_000)
	if err != nil {
		return err
	}
	large, err := p50("large", cfg.historyLargeChars)
	if err != nil {
		return err
	}
	r.time(sec, fmt.Sprintf("AppendToBlock p50, %s-char block vs 1k-char block", count(cfg.historyLargeChars)), large, small,
		fmt.Sprintf("%d appends of 20-160 chars per repeat, a fresh block every %d; goal ≤ 1.5×", len(plan.ops), perBlock))
	return nil
}

func count(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
