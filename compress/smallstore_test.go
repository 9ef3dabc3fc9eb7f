package compress_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

// fakeSummaries is a SummaryStore and nothing more: two methods, not the
// whole of an agent's messages. It proves compression needs no other part of a
// store.
type fakeSummaries struct {
	mu sync.Mutex
	ss []memory.Summary
}

var (
	_ compress.SummaryStore = (*fakeSummaries)(nil)
	_ compress.SummaryStore = (*memory.Messages)(nil)
)

func (f *fakeSummaries) SaveSummary(_ context.Context, s memory.Summary) (memory.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.ID = int64(len(f.ss) + 1)
	f.ss = append(f.ss, s)
	return s, nil
}

func (f *fakeSummaries) LatestSummary(context.Context) (memory.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ss) == 0 {
		return memory.Summary{}, fmt.Errorf("no summary: %w", memory.ErrNotFound)
	}
	return f.ss[len(f.ss)-1], nil
}

// withoutStamps is r without what only the store decides and the fake
// need not copy: the summary's creation time.
func withoutStamps(r compress.Result) compress.Result {
	if r.Summary != nil {
		s := *r.Summary
		s.CreatedAt = time.Time{}
		r.Summary = &s
	}
	return r
}

// TestSummaryStoreFakeMatchesRealStore: RecursiveSummarization over a fake
// holding only SummaryStore's two methods gives the same results as over a
// real store, both when it writes summaries and when a second compression
// reuses the latest one.
func TestSummaryStoreFakeMatchesRealStore(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	in := storedHistory(t, st, "ann", 10, "active")
	in.MaxMessages = 8
	fake := &fakeSummaries{}
	run := func(s compress.SummaryStore, maxMsgs int) compress.Result {
		t.Helper()
		in := in
		in.Summaries, in.MaxMessages = s, maxMsgs
		r, err := compress.RecursiveSummarization{ChunkSize: 6, SummarizationModel: "m", Summarizer: &countingSummarizer{}}.Compress(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, maxMsgs := range []int{8, 6} { // the second pass reuses, then extends, the latest summary
		real, fromFake := run(st.Agent("ann").Messages(), maxMsgs), run(fake, maxMsgs)
		if real.Summary == nil || fromFake.Summary == nil {
			t.Fatalf("max %d: no summary (real %v, fake %v)", maxMsgs, real.Summary, fromFake.Summary)
		}
		if maxMsgs == 6 && real.Summary.PreviousID == 0 {
			t.Fatal("the second pass did not build on the latest summary")
		}
		if !reflect.DeepEqual(withoutStamps(real), withoutStamps(fromFake)) {
			t.Fatalf("max %d: real store and fake differ:\nreal %+v\nfake %+v", maxMsgs, real, fromFake)
		}
	}
}
