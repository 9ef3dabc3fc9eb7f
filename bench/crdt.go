package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

func crdtInfo() blocks.Info {
	return blocks.Info{Label: "shared", Type: blocks.Working, Schema: schema.Text{},
		Permission: blocks.ReadWrite, Owner: "agent", CharLimit: 1 << 22}
}

func crdtLine(replica byte, i int) string { return fmt.Sprintf("%c%05d ", replica, i) }

// benchCRDT: comparison 5, concurrent appends on two replicas merged both
// ways vs the same appends serialised on one document.
func benchCRDT(cfg config, r *report) error {
	const sec = "crdt"
	half := cfg.crdtAppends / 2
	var concT, mergeT, serT, loadC, loadS []float64
	var size int
	for range cfg.repeats {
		// Two replicas of one block, 5,000 appends each at the same time.
		a, err := blocks.New(crdtInfo(), nil)
		if err != nil {
			return err
		}
		t0 := time.Now()
		b, err := a.Fork()
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for ri, d := range []*blocks.Document{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range half {
					if err := d.AppendText(crdtLine(byte('a'+ri), i), blocks.Agent); err != nil {
						errs[ri] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		t1 := time.Now()
		if err := a.Merge(b); err != nil {
			return err
		}
		if err := b.Merge(a); err != nil {
			return err
		}
		concT = append(concT, ms(time.Since(t0)))
		mergeT = append(mergeT, ms(time.Since(t1)))
		ta, err := a.Text()
		if err != nil {
			return err
		}
		tb, err := b.Text()
		if err != nil {
			return err
		}
		if ta != tb || len(ta) != 2*half*len(crdtLine('a', 0)) {
			return fmt.Errorf("crdt: replicas differ after merge (%d vs %d chars, want %d)", len(ta), len(tb), 2*half*len(crdtLine('a', 0)))
		}
		size = len(ta)

		// The same appends, serialised on one document.
		s, err := blocks.New(crdtInfo(), nil)
		if err != nil {
			return err
		}
		t0 = time.Now()
		for i := range half {
			for ri := range 2 {
				if err := s.AppendText(crdtLine(byte('a'+ri), i), blocks.Agent); err != nil {
					return err
				}
			}
		}
		serT = append(serT, ms(time.Since(t0)))

		// Load time of each saved document.
		for _, x := range []struct {
			d   *blocks.Document
			out *[]float64
		}{{a, &loadC}, {s, &loadS}} {
			data, err := x.d.Save()
			if err != nil {
				return err
			}
			t0 = time.Now()
			if _, err := blocks.Load(crdtInfo(), data, nil); err != nil {
				return err
			}
			*x.out = append(*x.out, ms(time.Since(t0)))
		}
	}
	n := humanCount(cfg.crdtAppends)
	r.time(sec, fmt.Sprintf("CRDT %s appends: 2 replicas + merge both ways vs serialized", n), median(concT), median(serT),
		fmt.Sprintf("%d per replica in parallel, merges %s; %d chars merged", half, formatValue(median(mergeT), unitMS), size))
	r.time(sec, fmt.Sprintf("CRDT load of the merged doc vs the serialized doc (%s ops)", n), median(loadC), median(loadS),
		"blocks.Load of Save() bytes")
	return nil
}
