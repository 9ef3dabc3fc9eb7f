package ui

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// TestMeasureLargestBlock measures the block page on a block at the
// character cap with a history of edits: time to first view, three views
// at once, and the process's peak heap and RSS. It only runs with
// ENGRAM_UI_MEASURE=1 (the numbers go to docs/performance.md).
func TestMeasureLargestBlock(t *testing.T) {
	if os.Getenv("ENGRAM_UI_MEASURE") != "1" {
		t.Skip("set ENGRAM_UI_MEASURE=1")
	}
	ctx := context.Background()
	path := os.Getenv("ENGRAM_UI_MEASURE_DB")
	if path == "" {
		path = filepath.Join(os.TempDir(), "engram-ui-measure.db")
	}
	if os.Getenv("ENGRAM_UI_MEASURE_CREATE") == "1" {
		createLargestBlock(t, path)
		return
	}
	if _, err := os.Stat(path); err != nil {
		// Made in another process, so this one starts with none of the
		// memory that making it took.
		cmd := exec.Command(os.Args[0], "-test.run=^TestMeasureLargestBlock$", "-test.v")
		cmd.Env = append(os.Environ(), "ENGRAM_UI_MEASURE_CREATE=1", "ENGRAM_UI_MEASURE_DB="+path)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("create the store: %v\n%s", err, out)
		}
	}
	// A fresh store, as "engram ui" opens it.
	s, err := memory.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv, err := New(s, &Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Minute}
	res, err := client.Get(ts.URL + "/?token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakHeap.Load() {
				peakHeap.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	defer close(stop)
	view := func(p string) (time.Duration, int) {
		start := time.Now()
		res, err := client.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, res.StatusCode)
		}
		return time.Since(start), int(n)
	}
	t.Logf("start: heap %d MB, RSS %s", heapMB(), rss())
	d, n := view("/blocks/ada/big")
	t.Logf("first view: %v (%d bytes), peak heap %d MB, RSS %s", d.Round(time.Millisecond), n, peakHeap.Load()>>20, rss())
	d, _ = view("/blocks/ada/big")
	t.Logf("second view: %v", d.Round(time.Millisecond))
	var wg sync.WaitGroup
	times := make([]time.Duration, 3)
	for i := range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); times[i], _ = view("/blocks/ada/big") }()
	}
	// A light page meanwhile.
	time.Sleep(50 * time.Millisecond)
	lt, _ := view("/proposals")
	wg.Wait()
	t.Logf("three at once: %v; /proposals meanwhile: %v; peak heap %d MB, RSS %s", times, lt.Round(time.Millisecond), peakHeap.Load()>>20, rss())
	// Diffs on demand: one, then three at once.
	hist, _ := s.Agent("ada").Shared("ada", "big").History(ctx)
	d, _ = view("/blocks/ada/big/changes/" + hist[len(hist)-1].Hash)
	t.Logf("one diff on demand: %v; peak heap %d MB, RSS %s", d.Round(time.Millisecond), peakHeap.Load()>>20, rss())
	codes := make([]int, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			res, err := client.Get(ts.URL + "/blocks/ada/big/changes/" + hist[len(hist)-2-i].Hash)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			codes[i], times[i] = res.StatusCode, time.Since(start)
		}()
	}
	time.Sleep(100 * time.Millisecond)
	var light []time.Duration
	for _, p := range []string{"/proposals", "/blocks/ada/big", "/"} {
		d, _ := view(p)
		light = append(light, d.Round(time.Millisecond))
	}
	wg.Wait()
	t.Logf("three diffs at once: %v, status %v; meanwhile /proposals, the block page, /: %v; peak heap %d MB, RSS %s",
		times, codes, light, peakHeap.Load()>>20, rss())
	runtime.GC()
	time.Sleep(200 * time.Millisecond)
	t.Logf("after GC: heap %d MB, RSS %s", heapMB(), rss())
}

// createLargestBlock makes a store with one block at the character cap
// and 30 edits after its creation.
func createLargestBlock(t *testing.T, path string) {
	ctx := context.Background()
	s, err := memory.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b strings.Builder
	for i := 0; b.Len() < blocks.MaxCharLimit-20_000; i++ {
		fmt.Fprintf(&b, "Line %d: the quick brown fox jumps over the lazy dog.\n", i)
	}
	if _, err := s.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "big", CharLimit: blocks.MaxCharLimit, Value: b.String()}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := s.Agent("ada").Block("big").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: fmt.Sprintf("edit %d\n", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func heapMB() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse >> 20
}

// rss is the process's resident set and its peak, from /proc.
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	var cur, peak string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			cur = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			peak = strings.TrimSpace(v)
		}
	}
	return cur + " (peak " + peak + ")"
}
