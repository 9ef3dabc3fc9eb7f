package serve_test

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseExposition reads the Prometheus text format back, failing the
// test on anything a scraper would refuse: a sample before its family's
// TYPE, a bad name, label or value, a repeated series, a histogram whose
// buckets are not cumulative or whose +Inf bucket is not its count. It
// returns each series' value under `name{l1="v1",l2="v2"}`, labels
// sorted, values unescaped.
func parseExposition(t *testing.T, r io.Reader) map[string]float64 {
	t.Helper()
	types := map[string]string{}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			f := strings.SplitN(rest, " ", 3)
			if len(f) < 3 || !metricName.MatchString(f[1]) {
				t.Fatalf("line %d: bad comment %q", n, line)
			}
			if f[0] == "TYPE" {
				if !slices.Contains([]string{"counter", "gauge", "histogram", "summary", "untyped"}, f[2]) || types[f[1]] != "" {
					t.Fatalf("line %d: bad or repeated TYPE %q", n, line)
				}
				types[f[1]] = f[2]
			}
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if !metricName.MatchString(name) {
			t.Fatalf("line %d: bad metric name in %q", n, line)
		}
		family := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && types[b] == "histogram" {
				family = b
			}
		}
		if types[family] == "" {
			t.Fatalf("line %d: sample %s before its TYPE", n, name)
		}
		var labels []string
		if strings.HasPrefix(rest, "{") {
			i := 1
			for rest[i] != '}' {
				eq := strings.IndexByte(rest[i:], '=')
				if eq < 0 {
					t.Fatalf("line %d: bad labels in %q", n, line)
				}
				ln := rest[i : i+eq]
				if !labelName.MatchString(ln) || rest[i+eq+1] != '"' {
					t.Fatalf("line %d: bad label %q in %q", n, ln, line)
				}
				i += eq + 2
				var v strings.Builder
				for ; rest[i] != '"'; i++ {
					if rest[i] == '\\' {
						i++
						switch rest[i] {
						case 'n':
							v.WriteByte('\n')
						case '\\', '"':
							v.WriteByte(rest[i])
						default:
							t.Fatalf("line %d: bad escape in %q", n, line)
						}
						continue
					}
					if rest[i] == '\n' {
						t.Fatalf("line %d: raw line feed", n)
					}
					v.WriteByte(rest[i])
				}
				i++
				labels = append(labels, fmt.Sprintf("%s=%q", ln, v.String()))
				if rest[i] == ',' {
					i++
				}
			}
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) != 1 {
			t.Fatalf("line %d: want one value (no timestamp) in %q", n, line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("line %d: value %q: %v", n, f[0], err)
		}
		slices.Sort(labels)
		key := name + "{" + strings.Join(labels, ",") + "}"
		if _, dup := out[key]; dup {
			t.Fatalf("line %d: series %s repeated", n, key)
		}
		out[key] = v
	}
	// Histograms: buckets cumulative, +Inf equal to the count.
	for key, v := range out {
		name, labels, _ := strings.Cut(strings.TrimSuffix(key, "}"), "{")
		base, ok := strings.CutSuffix(name, "_count")
		if !ok || types[base] != "histogram" {
			continue
		}
		prev := -1.0
		var les []float64
		byLE := map[float64]float64{}
		for k, bv := range out {
			bn, bl, _ := strings.Cut(strings.TrimSuffix(k, "}"), "{")
			if bn != base+"_bucket" {
				continue
			}
			var le float64
			var rest []string
			for _, l := range strings.Split(bl, ",") {
				if s, ok := strings.CutPrefix(l, "le="); ok {
					u, _ := strconv.Unquote(s)
					le, _ = strconv.ParseFloat(u, 64)
				} else {
					rest = append(rest, l)
				}
			}
			if strings.Join(rest, ",") == labels {
				les = append(les, le)
				byLE[le] = bv
			}
		}
		slices.Sort(les)
		if len(les) == 0 || !math.IsInf(les[len(les)-1], 1) {
			t.Fatalf("%s: no +Inf bucket", key)
		}
		for _, le := range les {
			if byLE[le] < prev {
				t.Fatalf("%s: buckets not cumulative at le=%v", key, le)
			}
			prev = byLE[le]
		}
		if prev != v {
			t.Fatalf("%s = %v, +Inf bucket %v", key, v, prev)
		}
	}
	return out
}

func (d *door) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	resp := d.do(t, "GET", "/metrics", "", map[string]string{"Authorization": "Bearer " + metricsSecret})
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return parseExposition(t, resp.Body)
}

// /metrics counts what the door did, in a format parsed back here, and
// only for the bearer of the metrics token.
func TestMetrics(t *testing.T) {
	d := newDoor(t, &serve.Options{MetricsToken: metricsSecret, Rate: 1e-3, Burst: 4, AuthFailureBurst: 2, AuthFailureRate: 1e-3})
	// Scraped once first, as a scraper does: its token, known good, then
	// passes while the guesses below hold the address.
	d.scrape(t)
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, tok)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	if r := reply(t, d.do(t, "POST", "/mcp", call, mcpHeader(tok, sid))); r.Error != nil {
		t.Fatalf("echo: %+v", r.Error)
	}
	// An unknown tool adds no series.
	d.do(t, "POST", "/mcp", strings.Replace(call, `"echo"`, `"nope"`, 1), mcpHeader(tok, sid))
	// The token's rate limit (burst 4: initialize, initialized, two calls).
	if st := d.do(t, "POST", "/mcp", call, mcpHeader(tok, sid)).StatusCode; st != 429 {
		t.Fatalf("past the token's burst: %d", st)
	}
	for i := range 3 {
		d.do(t, "POST", "/mcp", initBody, mcpHeader(fmt.Sprintf("engram_guess%d", i), ""))
	}
	d.do(t, "GET", "/healthz", "", nil)
	serve.ObserveTool(d.h, "we\"ird\\tool\nname", 3*time.Millisecond)

	want := map[string]float64{
		`engram_serve_requests_total{code="200",door="mcp"}`:                                    3,
		`engram_serve_requests_total{code="202",door="mcp"}`:                                    1,
		`engram_serve_requests_total{code="429",door="mcp"}`:                                    2,
		`engram_serve_requests_total{code="401",door="mcp"}`:                                    2,
		`engram_serve_requests_total{code="200",door="healthz"}`:                                1,
		`engram_serve_auth_failures_total{door="mcp"}`:                                          2,
		`engram_serve_auth_limited_total{scope="address"}`:                                      1,
		`engram_serve_rate_limited_total{door="mcp"}`:                                           1,
		`engram_serve_mcp_sessions{}`:                                                           1,
		`engram_serve_mcp_servers{}`:                                                            1,
		`engram_serve_sync_connections{}`:                                                       0,
		`engram_serve_auth_limited_addresses{}`:                                                 1,
		`engram_serve_mcp_tool_duration_seconds_count{tool="echo"}`:                             1,
		`engram_serve_mcp_tool_duration_seconds_bucket{le="+Inf",tool="echo"}`:                  1,
		`engram_serve_mcp_tool_duration_seconds_count{tool="we\"ird\\tool\nname"}`:              1,
		`engram_serve_mcp_tool_duration_seconds_bucket{le="0.0025",tool="we\"ird\\tool\nname"}`: 0,
		`engram_serve_mcp_tool_duration_seconds_bucket{le="0.005",tool="we\"ird\\tool\nname"}`:  1,
	}
	// A request is counted when its handler returns, which can be after
	// the client has read the whole answer: scrape until the counts settle.
	var got map[string]float64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got = d.scrape(t)
		settled := true
		for key, w := range want {
			if v, ok := got[key]; !ok || v != w {
				settled = false
			}
		}
		if settled || time.Now().After(deadline) {
			break
		}
	}
	for key, w := range want {
		if v, ok := got[key]; !ok || v != w {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, w)
		}
	}
	for key := range got {
		if strings.Contains(key, `tool="nope"`) {
			t.Errorf("an unknown tool made a series: %s", key)
		}
	}
	if s := got[`engram_serve_mcp_tool_duration_seconds_sum{tool="echo"}`]; s <= 0 || s > 10 {
		t.Errorf("echo's latency sum %v s", s)
	}
	// A scrape is counted by the next ones.
	scrapes := got[`engram_serve_requests_total{code="200",door="metrics"}`]
	if scrapes < 1 {
		t.Errorf("metrics requests %v after a scrape, want at least 1", scrapes)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		v := d.scrape(t)[`engram_serve_requests_total{code="200",door="metrics"}`]
		if v > scrapes || time.Now().After(deadline) {
			if v <= scrapes {
				t.Errorf("metrics requests %v, want more than %v", v, scrapes)
			}
			break
		}
	}
}

// /metrics is off without a metrics token, and refuses any other token
// (an agent's or a human's included).
func TestMetricsAccess(t *testing.T) {
	off := newDoor(t, nil)
	agent := off.token(t, accesstoken.Spec{Agent: "ada"})
	if st := off.do(t, "GET", "/metrics", "", map[string]string{"Authorization": "Bearer " + agent}).StatusCode; st != 404 {
		t.Errorf("without a metrics token: %d, want 404", st)
	}
	d := newDoor(t, &serve.Options{MetricsToken: metricsSecret})
	agent = d.token(t, accesstoken.Spec{Agent: "ada"})
	human := d.token(t, accesstoken.Spec{Human: "alice"})
	for _, c := range []struct {
		name   string
		method string
		header map[string]string
		status int
	}{
		{"no token", "GET", nil, 401},
		{"wrong token", "GET", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"an agent's token", "GET", map[string]string{"Authorization": "Bearer " + agent}, 401},
		{"a human's token", "GET", map[string]string{"Authorization": "Bearer " + human}, 401},
		{"as a query", "GET", nil, 401},
		{"POST", "POST", map[string]string{"Authorization": "Bearer " + metricsSecret}, 405},
		{"the metrics token", "GET", map[string]string{"Authorization": "Bearer " + metricsSecret}, 200},
		{"HEAD", "HEAD", map[string]string{"Authorization": "Bearer " + metricsSecret}, 200},
	} {
		path := "/metrics"
		if c.name == "as a query" {
			path += "?token=" + metricsSecret
		}
		resp := d.do(t, c.method, path, "", c.header)
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
		if c.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", c.name)
		}
	}
}
