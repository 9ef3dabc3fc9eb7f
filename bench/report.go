package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Units of a row's figures. Times are stored in milliseconds.
const (
	unitMS    = "ms"
	unitOps   = "ops/s"
	unitScore = "score"
	unitX     = "x" // a plain number (counts, sizes)
)

// row is one line of the table: engram against a baseline on identical
// data. Ratio is always engram / baseline; Better says which way is good.
type row struct {
	Section    string  `json:"section"`
	Comparison string  `json:"comparison"`
	Engram     float64 `json:"engram"`
	Baseline   float64 `json:"baseline"`
	Unit       string  `json:"unit"`
	Better     string  `json:"better,omitempty"` // "lower" or "higher"
	Ratio      float64 `json:"ratio"`
	Verdict    string  `json:"verdict,omitempty"` // "win", "loss", "tie"
	Note       string  `json:"note,omitempty"`
	// P95 is [engram, baseline] 95th percentiles (ms) for latency rows,
	// whose Engram and Baseline are the medians (p50).
	P95 []float64 `json:"p95_ms,omitempty"`
}

type machine struct {
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GoVersion  string `json:"go_version"`
	SQLite     string `json:"sqlite_driver"`
	CPU        string `json:"cpu,omitempty"`
}

type report struct {
	Mode    string  `json:"mode"`
	Rows    []row   `json:"rows"`
	Machine machine `json:"machine"`
	Elapsed string  `json:"elapsed"`
	Failed  bool    `json:"failed,omitempty"`
}

func (r *report) add(x row) { r.Rows = append(r.Rows, x) }

// time adds a lower-is-better timing row (values in ms).
func (r *report) time(section, cmp string, engram, baseline float64, note string) {
	r.compare(section, cmp, engram, baseline, unitMS, "lower", note)
}

// latency adds a p50 row whose note (and P95 field) carries the p95s.
func (r *report) latency(section, cmp string, e, b latency, note string) {
	n := fmt.Sprintf("p95 %s vs %s", formatValue(e.p95, unitMS), formatValue(b.p95, unitMS))
	if note != "" {
		n += "; " + note
	}
	r.time(section, cmp, e.p50, b.p50, n)
	r.Rows[len(r.Rows)-1].P95 = []float64{e.p95, b.p95}
}

// compare adds a row and fills Ratio, Verdict and the automatic part of
// Note (by how much engram wins or loses).
func (r *report) compare(section, cmp string, engram, baseline float64, unit, better, note string) {
	x := row{Section: section, Comparison: cmp, Engram: engram, Baseline: baseline, Unit: unit, Better: better}
	if baseline != 0 {
		x.Ratio = engram / baseline
	}
	auto := ""
	switch {
	case baseline == 0 || better == "":
	case unit == unitScore:
		d := engram - baseline
		rel := d / baseline * 100
		switch {
		case math.Abs(d) < 0.005:
			x.Verdict, auto = "tie", "same"
		case d < 0:
			x.Verdict, auto = "loss", fmt.Sprintf("engram lower by %.3f (%.0f%%)", -d, -rel)
		default:
			x.Verdict, auto = "win", fmt.Sprintf("engram higher by %.3f (+%.0f%%)", d, rel)
		}
	default:
		q := x.Ratio // > 1 means engram is bigger
		worse := (better == "lower" && q > 1) || (better == "higher" && q < 1)
		f := q
		if f < 1 {
			f = 1 / f
		}
		what := map[bool]string{true: "slower", false: "faster"}[worse]
		if unit == unitOps {
			what = map[bool]string{true: "less throughput", false: "more throughput"}[worse]
		}
		switch {
		case f < 1.10:
			x.Verdict, auto = "tie", "within 10%"
		case worse:
			x.Verdict, auto = "loss", fmt.Sprintf("engram loses: %.1f× %s", f, what)
		default:
			x.Verdict, auto = "win", fmt.Sprintf("engram %.1f× %s", f, what)
		}
	}
	switch {
	case auto != "" && note != "":
		x.Note = auto + "; " + note
	case auto != "":
		x.Note = auto
	default:
		x.Note = note
	}
	r.add(x)
}

func formatValue(v float64, unit string) string {
	switch unit {
	case unitMS:
		switch {
		case v == 0:
			return "0"
		case v < 1:
			return fmt.Sprintf("%.1f µs", v*1000)
		case v < 100:
			return fmt.Sprintf("%.2f ms", v)
		case v < 10_000:
			return fmt.Sprintf("%.0f ms", v)
		default:
			return fmt.Sprintf("%.1f s", v/1000)
		}
	case unitOps:
		return fmt.Sprintf("%.0f ops/s", v)
	case unitScore:
		return fmt.Sprintf("%.3f", v)
	default:
		if v == math.Trunc(v) {
			return fmt.Sprintf("%.0f", v)
		}
		return fmt.Sprintf("%.3g", v)
	}
}

func formatRatio(x row) string {
	if x.Baseline == 0 || x.Ratio == 0 {
		return "-"
	}
	if x.Ratio >= 100 {
		return fmt.Sprintf("%.0f×", x.Ratio)
	}
	return fmt.Sprintf("%.2f×", x.Ratio)
}

// print writes the table: comparison | engram | baseline | ratio | note.
func (r *report) print(w io.Writer) {
	head := []string{"comparison", "engram", "baseline", "ratio", "note"}
	cells := [][]string{}
	var sections []string
	for _, x := range r.Rows {
		if !slices.Contains(sections, x.Section) {
			sections = append(sections, x.Section)
		}
	}
	for _, s := range sections {
		for _, x := range r.Rows {
			if x.Section != s {
				continue
			}
			e, b := formatValue(x.Engram, x.Unit), formatValue(x.Baseline, x.Unit)
			if x.Unit == "" {
				e, b = "", ""
			}
			cells = append(cells, []string{x.Comparison, e, b, formatRatio(x), x.Note})
		}
	}
	width := make([]int, len(head))
	for i, h := range head {
		width[i] = len([]rune(h))
	}
	for _, c := range cells {
		for i, s := range c[:4] { // the note column is not padded
			width[i] = max(width[i], len([]rune(s)))
		}
	}
	line := func(c []string) {
		var sb strings.Builder
		sb.WriteString("|")
		for i, s := range c {
			pad := 0
			if i < 4 {
				pad = width[i] - len([]rune(s))
			}
			if i == 1 || i == 2 || i == 3 { // right-align numbers
				sb.WriteString(" " + strings.Repeat(" ", pad) + s + " |")
			} else {
				sb.WriteString(" " + s + strings.Repeat(" ", pad) + " |")
			}
		}
		fmt.Fprintln(w, sb.String())
	}
	fmt.Fprintf(w, "engram bench (%s): ratio = engram / baseline, medians of repeats\n\n", r.Mode)
	line(head)
	sep := make([]string, len(head))
	for i := range sep {
		n := 3
		if i < 4 {
			n = width[i]
		}
		sep[i] = strings.Repeat("-", n)
	}
	line(sep)
	for _, c := range cells {
		line(c)
	}
	m := r.Machine
	fmt.Fprintf(w, "\nmachine: %d CPUs (GOMAXPROCS %d), %s/%s, %s; SQLite driver %s", m.NumCPU, m.GOMAXPROCS, m.GOOS, m.GOARCH, m.GoVersion, m.SQLite)
	if m.CPU != "" {
		fmt.Fprintf(w, ", %s", m.CPU)
	}
	fmt.Fprintf(w, "; total %s\n", r.Elapsed)
}

// ms converts a duration to float64 milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile p (0..1) of durations, nearest rank, in ms.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return ms(s[min(max(i, 0), len(s)-1)])
}

// latency is p50 and p95 of one repeat's per-operation times.
type latency struct{ p50, p95 float64 }

func latencyOf(ds []time.Duration) latency {
	return latency{percentile(ds, 0.50), percentile(ds, 0.95)}
}

// medianLatency is the median over repeats of each percentile.
func medianLatency(ls []latency) latency {
	var a, b []float64
	for _, l := range ls {
		a = append(a, l.p50)
		b = append(b, l.p95)
	}
	return latency{median(a), median(b)}
}
