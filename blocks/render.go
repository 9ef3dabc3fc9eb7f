package blocks

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/schema"
)

// renderMode selects between what a model sees (windowed) and the full
// content that character limits are measured on.
type renderMode int

const (
	renderView renderMode = iota // viewport and log display limit applied
	renderFull                   // everything; used for sizes
)

// render turns a model value into text. It is a pure function of its inputs
// (no clock, no map iteration order), so equal documents render to equal
// bytes.
func render(s schema.Schema, v any, mode renderMode) string {
	if sc, ok := schema.Deref(s).(schema.Text); ok && (mode != renderView || sc.Viewport == nil) {
		// A Text block renders as its text: no copy (it may be large).
		text, _ := v.(string)
		return text
	}
	var b strings.Builder
	renderTo(&b, s, v, mode)
	return b.String()
}

func renderTo(b *strings.Builder, s schema.Schema, v any, mode renderMode) {
	switch sc := schema.Deref(s).(type) {
	case schema.Text:
		text, _ := v.(string)
		if mode == renderView && sc.Viewport != nil {
			b.WriteString(viewport(text, *sc.Viewport))
			return
		}
		b.WriteString(text)
	case schema.Map:
		m, _ := v.(map[string]any)
		for i, f := range sc.Fields {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(f.Name)
			if f.ReadOnly {
				b.WriteString(" [read-only]")
			}
			b.WriteByte(':')
			if fv, ok := m[f.Name]; ok && fv != nil {
				if s := formatValue(fv); s != "" {
					b.WriteByte(' ')
					b.WriteString(s)
				}
			}
		}
	case schema.List:
		items, _ := v.([]Item)
		for i, it := range items {
			if i > 0 {
				b.WriteByte('\n')
			}
			if sc.Checkbox {
				if it.Checked {
					b.WriteString("[x] ")
				} else {
					b.WriteString("[ ] ")
				}
			} else {
				b.WriteString(strconv.Itoa(i + 1))
				b.WriteString(". ")
			}
			b.WriteString(formatValue(it.Value))
		}
	case schema.Log:
		entries, _ := v.([]LogEntry)
		order := newestFirst(entries)
		if mode == renderView && sc.DisplayLimit > 0 && len(order) > sc.DisplayLimit {
			order = order[:sc.DisplayLimit]
		}
		for i, idx := range order {
			if i > 0 {
				b.WriteByte('\n')
			}
			e := entries[idx]
			b.WriteByte('[')
			b.WriteString(e.Timestamp.UTC().Format(time.RFC3339))
			b.WriteString("] ")
			b.WriteString(e.Message)
			var extra []string
			for _, f := range sc.Entry {
				if fv, ok := e.Fields[f.Name]; ok && fv != nil {
					extra = append(extra, f.Name+": "+formatValue(fv))
				}
			}
			if len(extra) > 0 {
				b.WriteString(" (")
				b.WriteString(strings.Join(extra, ", "))
				b.WriteByte(')')
			}
		}
	case schema.Composite:
		secs, _ := v.(map[string]any)
		for i, sec := range sc.Sections {
			if i > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString("=== ")
			b.WriteString(sec.Name)
			if sec.ReadOnly {
				b.WriteString(" [read-only]")
			}
			b.WriteString(" ===")
			var inner strings.Builder
			renderTo(&inner, sec.Schema, secs[sec.Name], mode)
			if inner.Len() > 0 {
				b.WriteByte('\n')
				b.WriteString(inner.String())
			}
		}
	}
}

// newestFirst returns entry indexes ordered newest first; entries with equal
// timestamps keep later-appended first.
func newestFirst(entries []LogEntry) []int {
	idx := make([]int, len(entries))
	for i := range idx {
		idx[i] = len(entries) - 1 - i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return entries[idx[a]].Timestamp.After(entries[idx[b]].Timestamp)
	})
	return idx
}

// viewport renders the window of text lines and a position line. A text that
// fits the window is shown whole without the position line.
func viewport(text string, vp schema.Viewport) string {
	lines := strings.Split(text, "\n")
	total := len(lines)
	if total <= vp.Lines && vp.Start <= 1 {
		return text
	}
	start := vp.Start
	if start > total {
		start = max(1, total-vp.Lines+1)
	}
	end := min(total, start+vp.Lines-1)
	return strings.Join(lines[start-1:end], "\n") + fmt.Sprintf("\n[lines %d-%d of %d]", start, end, total)
}

// formatValue renders one field value on one line where possible.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatValue(e)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		// encoding/json sorts map keys, so this is deterministic.
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }
