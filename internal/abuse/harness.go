package abuse

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// The agents, blocks and limits of the harness's store.
const (
	VictimAgent   = "ada"     // the agent that works during the attacks
	VictimLabel   = "log"     // its block, appended to by every victim call
	AttackerAgent = "mallory" // the agent whose tokens attack
	AttackerLabel = "notes"   // its block, the target of the /sync attacks
	// AttackerLimit is the attacker's block's character limit.
	AttackerLimit = 5_000
	// AttackerWideLabel is the attacker's block of the largest character
	// limit (blocks.MaxCharLimit), the target of the compressed-change
	// attack: a change to it may inflate to the most bytes.
	AttackerWideLabel = "wide"
)

// Options configure a Harness. Dir and Command are required; the rest
// have defaults.
type Options struct {
	// Dir holds the store (abuse.db) and the server's stderr (serve.log).
	Dir string
	// Command returns the command that runs engram serve on the store db
	// with --json on a free port (--addr 127.0.0.1:0): its first line of
	// stdout is serve's JSON with the "url" key.
	Command func(db string) *exec.Cmd
	// Quiet is how long the victim's latency and the server's idle CPU
	// are measured before any attack. Default 5 s.
	Quiet time.Duration
	// Window is the least time an attack's measurement lasts (the victim's
	// calls started within it are its latency under attack). Default 3 s.
	Window time.Duration
	// Every is the victim's pace: one block_append this often (one at a
	// time; a slow call delays the next). Default 25 ms: 40 calls a
	// second, within a token's default rate (50), so a 3 s window holds
	// about 120 calls, enough for a p99 that is not just the slowest.
	Every time.Duration
	// AttackTimeout bounds one attack's requests; SettleTimeout how long
	// the server may stay busy after them before the measurement ends
	// (the result says it did not settle). Defaults 60 s and 30 s.
	AttackTimeout, SettleTimeout time.Duration
	// MaxRSS is the child's resident set at which the harness kills it
	// (and starts another): an attack that makes the server grow without
	// bound must not take the machine with it. Default 4 GiB.
	MaxRSS int64
	// Logf, when set, gets progress lines.
	Logf func(format string, args ...any)
}

// Harness runs engram serve as a child process on a fresh store with a
// victim agent calling block_append over MCP, and measures attacks on it.
type Harness struct {
	opts     Options
	db       string
	log      string
	victim   string // the victim's token
	attacker string // the attacker's read-write token
	readOnly string // the attacker's read-only token
	docID    string // the attacker's block's automerge-repo document id
	wideID   string // the same of its AttackerWideLabel block
	saved    []byte // the attacker's block's document, as the store has it
	// wideSaved is the same of its AttackerWideLabel block.
	wideSaved []byte

	mu       sync.Mutex
	srv      *server
	samples  []sample
	acked    []string
	restarts int

	stopVictim context.CancelFunc
	victimDone chan struct{}
	quiet      Latency
	idleRate   float64 // server CPU seconds per second with only the victim working
}

type server struct {
	cmd  *exec.Cmd
	base string
	done chan struct{} // closed when the process has exited
	err  error         // its exit, once done is closed
}

// sample is one victim call, or (missed) one the victim would have made
// on its schedule while a slow call held it up.
type sample struct {
	start  time.Time
	took   time.Duration
	ok     bool
	missed bool
}

// Latency summarizes the victim's calls in a window. Its percentiles
// count the calls the victim's schedule missed while a call was slow, as
// if each had waited from its slot until that call ended (coordinated
// omission corrected): a server that stalls the victim for 3 s once in a
// 20 s attack shows it in the p99, not as one slow call among 800.
type Latency struct {
	Calls  int // calls made
	Errors int // calls that failed or answered a tool error
	P50    time.Duration
	P99    time.Duration
	Max    time.Duration
}

func latencyOf(s []sample) Latency {
	var l Latency
	ds := make([]time.Duration, 0, len(s))
	for _, x := range s {
		if !x.missed {
			l.Calls++
			if !x.ok {
				l.Errors++
			}
		}
		ds = append(ds, x.took)
		l.Max = max(l.Max, x.took)
	}
	if len(ds) == 0 {
		return l
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.5) - 1
		return ds[max(0, min(i, len(ds)-1))]
	}
	l.P50, l.P99 = q(0.50), q(0.99)
	return l
}

func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Start seeds a store in opts.Dir, starts engram serve on it and the
// victim, and measures the quiet baseline.
func Start(ctx context.Context, opts *Options) (*Harness, error) {
	o := *opts
	if o.Dir == "" || o.Command == nil {
		return nil, errors.New("abuse: Options.Dir and Options.Command are required")
	}
	if o.Quiet <= 0 {
		o.Quiet = 5 * time.Second
	}
	if o.Window <= 0 {
		o.Window = 3 * time.Second
	}
	if o.Every <= 0 {
		o.Every = 25 * time.Millisecond
	}
	if o.AttackTimeout <= 0 {
		o.AttackTimeout = time.Minute
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = 30 * time.Second
	}
	if o.MaxRSS <= 0 {
		o.MaxRSS = 4 << 30
	}
	h := &Harness{opts: o, db: filepath.Join(o.Dir, "abuse.db"), log: filepath.Join(o.Dir, "serve.log")}
	if err := h.seed(ctx); err != nil {
		return nil, err
	}
	if err := h.start(ctx); err != nil {
		return nil, err
	}
	vctx, cancel := context.WithCancel(context.Background())
	h.stopVictim, h.victimDone = cancel, make(chan struct{})
	go h.runVictim(vctx)
	// Warm up: the victim's session opens, its block and the server's
	// caches load.
	time.Sleep(time.Second)
	srv := h.server()
	cpu0, err := cpuTime(srv.cmd.Process.Pid)
	if err != nil {
		h.Close()
		return nil, err
	}
	t0 := time.Now()
	time.Sleep(o.Quiet)
	cpu1, err := cpuTime(srv.cmd.Process.Pid)
	if err != nil {
		h.Close()
		return nil, err
	}
	t1 := time.Now()
	h.idleRate = (cpu1 - cpu0).Seconds() / t1.Sub(t0).Seconds()
	if h.quiet, err = h.quietLatency(t0, t1); err != nil {
		h.Close()
		return nil, err
	}
	o.logf("quiet: victim p50 %v p99 %v over %d calls; server idle CPU %.1f%%", h.quiet.P50, h.quiet.P99, h.quiet.Calls, 100*h.idleRate)
	return h, nil
}

// Quiet is the victim's latency with no attack running, measured at
// Start: the baseline every Run is judged against.
func (h *Harness) Quiet() Latency { return h.quiet }

// Requiet measures the victim's latency again over d (Options.Quiet when
// d <= 0), with no attack running, for judging one attack again: a shared
// machine's load moves while a long series of attacks runs, and an
// attack whose only fault was the victim's p99 may be run once more and
// judged against this baseline (set it as the retry's Result.Quiet). It
// does not change the baseline of later Runs. It fails when the victim
// has not come back to within l's bound of the Start baseline (l.Ratio ×
// its p99 + l.Slack): a server an attack left slow for good is not
// judged against its own slowness.
func (h *Harness) Requiet(ctx context.Context, d time.Duration, l Limits) (Latency, error) {
	if d <= 0 {
		d = h.opts.Quiet
	}
	t0 := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return Latency{}, ctx.Err()
	}
	t1 := time.Now()
	h.waitVictimPast(t1, h.opts.SettleTimeout)
	q, err := h.quietLatency(t0, t1)
	if err != nil {
		return q, err
	}
	h.opts.logf("quiet again: victim p50 %v p99 %v over %d calls", q.P50, q.P99, q.Calls)
	if bound := (Result{Quiet: h.quiet}).victimBound(l); q.P99 > bound {
		return q, fmt.Errorf("abuse: with no attack running the victim's p99 is %v, past %v (%.0f× its quiet %v at the start, plus %v): the server has not come back",
			q.P99.Round(time.Microsecond), bound.Round(time.Microsecond), l.Ratio, h.quiet.P99.Round(time.Microsecond), l.Slack)
	}
	return q, nil
}

// quietLatency is the victim's latency from t0 to t1, with no attack
// running; an error if it made no call or any failed.
func (h *Harness) quietLatency(t0, t1 time.Time) (Latency, error) {
	q := h.latency(t0, t1)
	if q.Calls == 0 || q.Errors > 0 {
		return q, fmt.Errorf("abuse: the victim's quiet calls: %d, %d failed%s", q.Calls, q.Errors, h.logTail())
	}
	return q, nil
}

// seed makes the store: the victim's block, the attacker's block of
// AttackerLimit characters, and the three tokens.
func (h *Harness) seed(ctx context.Context) error {
	st, err := memory.Open(ctx, h.db, nil)
	if err != nil {
		return fmt.Errorf("abuse: open the store %s: %w", h.db, err)
	}
	defer st.Close()
	if _, err := st.Agent(VictimAgent).CreateBlock(ctx, memory.BlockSpec{Label: VictimLabel, Value: "victim's log\n", CharLimit: 1 << 20}); err != nil {
		return fmt.Errorf("abuse: create the victim's block: %w", err)
	}
	if _, err := st.Agent(AttackerAgent).CreateBlock(ctx, memory.BlockSpec{Label: AttackerLabel, Value: "hello\n", CharLimit: AttackerLimit}); err != nil {
		return fmt.Errorf("abuse: create the attacker's block: %w", err)
	}
	if _, err := st.Agent(AttackerAgent).CreateBlock(ctx, memory.BlockSpec{Label: AttackerWideLabel, Value: "hello\n", CharLimit: blocks.MaxCharLimit}); err != nil {
		return fmt.Errorf("abuse: create the attacker's wide block: %w", err)
	}
	for _, t := range []struct {
		secret *string
		spec   accesstoken.Spec
	}{
		{&h.victim, accesstoken.Spec{Agent: VictimAgent, Name: "victim"}},
		{&h.attacker, accesstoken.Spec{Agent: AttackerAgent, Name: "attacker"}},
		{&h.readOnly, accesstoken.Spec{Agent: AttackerAgent, Name: "attacker read-only", ReadOnly: true}},
	} {
		if _, *t.secret, err = accesstoken.Of(st).Create(ctx, t.spec); err != nil {
			return fmt.Errorf("abuse: create the %s token: %w", t.spec.Name, err)
		}
	}
	id, err := st.Agent(AttackerAgent).Block(AttackerLabel).DocumentID(ctx)
	if err != nil {
		return fmt.Errorf("abuse: the attacker's block's document id: %w", err)
	}
	h.docID = strings.TrimPrefix(syncrepo.URL(id), syncrepo.URLPrefix)
	if id, err = st.Agent(AttackerAgent).Block(AttackerWideLabel).DocumentID(ctx); err != nil {
		return fmt.Errorf("abuse: the attacker's wide block's document id: %w", err)
	}
	h.wideID = strings.TrimPrefix(syncrepo.URL(id), syncrepo.URLPrefix)
	doc, err := st.Agent(AttackerAgent).Block(AttackerLabel).Doc(ctx)
	if err != nil {
		return fmt.Errorf("abuse: read the attacker's block: %w", err)
	}
	if h.saved, err = doc.Save(); err != nil {
		return fmt.Errorf("abuse: save the attacker's block: %w", err)
	}
	if doc, err = st.Agent(AttackerAgent).Block(AttackerWideLabel).Doc(ctx); err != nil {
		return fmt.Errorf("abuse: read the attacker's wide block: %w", err)
	}
	if h.wideSaved, err = doc.Save(); err != nil {
		return fmt.Errorf("abuse: save the attacker's wide block: %w", err)
	}
	return nil
}

// start runs a server process on the store.
func (h *Harness) start(ctx context.Context) error {
	logf, err := os.OpenFile(h.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := h.opts.Command(h.db)
	cmd.Stderr = logf
	dieWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("abuse: start engram serve: %w", err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		var info struct{ URL string }
		r := bufio.NewReader(out)
		if json.NewDecoder(r).Decode(&info) == nil {
			addr <- info.URL
		}
		close(addr)
		io.Copy(io.Discard, r)
	}()
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	select {
	case u, ok := <-addr:
		if !ok || u == "" {
			cmd.Process.Kill()
			<-s.done
			return fmt.Errorf("abuse: engram serve printed no address: %v%s", s.err, h.logTail())
		}
		s.base = u
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("abuse: engram serve printed no address in 30 s%s", h.logTail())
	case <-ctx.Done():
		cmd.Process.Kill()
		<-s.done
		return ctx.Err()
	}
	h.mu.Lock()
	h.srv = s
	h.mu.Unlock()
	return nil
}

func (h *Harness) server() *server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.srv
}

// logTail is the end of the server's stderr, for an error message.
func (h *Harness) logTail() string {
	b, err := os.ReadFile(h.log)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return "\nengram serve stderr (end):\n" + string(b)
}

// bearer adds the token to every request of an HTTP client.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// runVictim calls block_append every Options.Every, one call at a time,
// through the go-sdk client, reconnecting when the server restarts.
func (h *Harness) runVictim(ctx context.Context) {
	defer close(h.victimDone)
	var cs *mcp.ClientSession
	var csBase string
	defer func() {
		if cs != nil {
			cs.Close()
		}
	}()
	tick := time.NewTicker(h.opts.Every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		base := h.server().base
		start := time.Now()
		if cs == nil || csBase != base {
			if cs != nil {
				cs.Close()
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			var err error
			cs, err = connect(cctx, base, h.victim)
			cancel()
			if err != nil {
				cs = nil
				if ctx.Err() == nil {
					h.record(sample{start: start, took: time.Since(start)}, "")
				}
				continue
			}
			csBase = base
			start = time.Now()
		}
		mark := fmt.Sprintf("[v%d]", i)
		cctx, cancel := context.WithTimeout(ctx, victimTimeout)
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "block_append", Arguments: map[string]any{"label": VictimLabel, "text": mark}})
		cancel()
		s := sample{start: start, took: time.Since(start), ok: err == nil && !res.IsError}
		if ctx.Err() != nil {
			return // a call cut short by Close is no measurement
		}
		if s.ok {
			h.record(s, mark)
		} else {
			h.record(s, "")
		}
		// The calls the schedule missed meanwhile.
		for k := time.Duration(1); s.took-k*h.opts.Every > 0; k++ {
			h.record(sample{start: s.start.Add(k * h.opts.Every), took: s.took - k*h.opts.Every, ok: s.ok, missed: true}, "")
		}
		if err != nil {
			cs.Close()
			cs = nil
		}
	}
}

// victimTimeout bounds one victim call: a server that takes longer is
// as good as down for the victim.
const victimTimeout = 30 * time.Second

func connect(ctx context.Context, base, token string) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}}
	return mcp.NewClient(&mcp.Implementation{Name: "engram-abuse-victim", Version: "0"}, nil).Connect(ctx, tr, nil)
}

func (h *Harness) record(s sample, acked string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples = append(h.samples, s)
	if acked != "" {
		h.acked = append(h.acked, acked)
	}
}

// latency is the victim's calls started in [t0, t1).
func (h *Harness) latency(t0, t1 time.Time) Latency {
	h.mu.Lock()
	defer h.mu.Unlock()
	var in []sample
	for _, s := range h.samples {
		if !s.start.Before(t0) && s.start.Before(t1) {
			in = append(in, s)
		}
	}
	return latencyOf(in)
}

// waitVictimPast waits (up to d) until the victim has finished a call
// started at or after t: every call started before t is then recorded.
func (h *Harness) waitVictimPast(t time.Time, d time.Duration) {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		h.mu.Lock()
		past := false
		for i := len(h.samples) - 1; i >= 0; i-- {
			if !h.samples[i].missed {
				past = !h.samples[i].start.Before(t)
				break
			}
		}
		h.mu.Unlock()
		if past {
			return
		}
	}
}

// Result is one attack's measurement.
type Result struct {
	Name     string
	Requests int     // requests, frames or connections the attack sent
	Scale    float64 // the attack's size as a fraction of its Bench size (1 for unsized attacks)
	Bytes    int64   // bytes the attack sent (its frames or bodies)
	Outcome  string  // what the server answered
	Answered bool    // it answered at all (a refusal, an error or a close count; silence does not)
	Err      error   // the harness failed to run the attack (no measurement)

	CPU        time.Duration // server CPU beyond its idle rate, from the attack's start until it settled
	RSSBefore  int64         // the server's resident set before the attack
	PeakGrowth int64         // its peak resident set during the attack, less RSSBefore
	Prepare    time.Duration // making its payload and opening its connections, before the measurement
	Wall       time.Duration // the measurement's length
	Settled    bool          // the server's CPU went back to idle within SettleTimeout
	Quiet      Latency       // the victim before any attack
	Attacked   Latency       // the victim's calls started during the measurement
	Acked      int           // the victim's acknowledged writes so far
	Lost       int           // of those, missing from the store
	Alive      bool          // the process was running and answering /healthz after the attack
	Exit       string        // how it ended, when it did not live
	Killed     string        // why the harness killed the server after the attack (and started another), if it did
	// Recovery is how long, once the attack was over and the server
	// idle, a new MCP session of the victim's token took to open and list
	// its tools (probeTimeout when it did not); AttackerRecovery the same
	// for the attacker's token.
	Recovery, AttackerRecovery time.Duration
}

// probeTimeout bounds a recovery probe; RecoveryLimit is the longest a
// new session of the victim may take after an attack.
const (
	probeTimeout  = time.Minute
	RecoveryLimit = 5 * time.Second
)

// probe opens a new MCP session of token and lists its tools, and
// returns how long that took.
func (h *Harness) probe(ctx context.Context, token string) time.Duration {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cs, err := connect(ctx, h.server().base, token)
	if err != nil {
		return probeTimeout
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return probeTimeout
	}
	return time.Since(start)
}

// Ratio is the victim's p99 under attack over its quiet p99.
func (r Result) Ratio() float64 {
	if r.Quiet.P99 <= 0 {
		return 0
	}
	return float64(r.Attacked.P99) / float64(r.Quiet.P99)
}

// Limits are the bounds an attack is held to.
type Limits struct {
	CPU   time.Duration // server CPU per request
	RSS   int64         // peak resident set growth over the whole attack
	Ratio float64       // victim p99 under attack / quiet p99
	// Slack is added to Ratio × quiet p99: jitter of a shared machine
	// (a 2 ms quiet p99 doubled is still within scheduler noise).
	Slack time.Duration
}

// Goal is the bound engram serve is held to: any single request by any
// token costs at most 2 s of server CPU and 256 MiB of peak RSS growth,
// and another agent's p99 under attack is at most twice its quiet p99.
var Goal = Limits{CPU: 2 * time.Second, RSS: 256 << 20, Ratio: 2}

// Violations lists how r breaks l (nothing when it holds). A sized
// attack run below its Bench size (Scale < 1) is held to CPU and RSS
// bounds scaled down with it, to a quarter of l's at least. The CPU
// bound is per request; the RSS bound is for the whole attack, however
// many requests it makes.
func (r Result) Violations(l Limits) []string {
	if r.Err != nil {
		return []string{"not measured: " + r.Err.Error()}
	}
	var v []string
	if !r.Answered {
		v = append(v, "the server never answered: "+r.Outcome)
	}
	scale := r.Scale
	if scale <= 0 || scale > 1 {
		scale = 1
	}
	scale = max(scale, 0.25)
	req := max(r.Requests, 1)
	cpuMax := time.Duration(float64(l.CPU) * scale)
	if per := r.CPU / time.Duration(req); per > cpuMax {
		v = append(v, fmt.Sprintf("server CPU %.2f s per request (%.2f s for %d) > %.2f s", per.Seconds(), r.CPU.Seconds(), req, cpuMax.Seconds()))
	}
	if !r.Settled && r.Alive {
		v = append(v, fmt.Sprintf("the server was still busy %v after the attack began", r.Wall.Round(time.Millisecond)))
	}
	if rssMax := int64(float64(l.RSS) * scale); r.PeakGrowth > rssMax {
		v = append(v, fmt.Sprintf("peak RSS growth %.1f MiB > %.1f MiB", mib(r.PeakGrowth), mib(rssMax)))
	}
	if r.SlowVictim(l) {
		v = append(v, fmt.Sprintf("victim p99 %v under attack, %.1f× its quiet %v (bound %v)", r.Attacked.P99.Round(time.Microsecond), r.Ratio(), r.Quiet.P99.Round(time.Microsecond), r.victimBound(l).Round(time.Microsecond)))
	}
	if r.Attacked.Errors > 0 {
		v = append(v, fmt.Sprintf("%d of the victim's %d calls failed under attack", r.Attacked.Errors, r.Attacked.Calls))
	}
	if r.Alive && r.Killed == "" && r.Recovery > RecoveryLimit {
		v = append(v, fmt.Sprintf("after the attack a new session of the victim took %v to list its tools (bound %v)", r.Recovery.Round(time.Millisecond), RecoveryLimit))
	}
	if r.Lost > 0 {
		v = append(v, fmt.Sprintf("%d of %d acknowledged writes lost", r.Lost, r.Acked))
	}
	if !r.Alive {
		v = append(v, "the server process died: "+r.Exit)
	}
	return v
}

// SlowVictim reports whether the victim's p99 under attack broke l's
// bound (Ratio × quiet p99 + Slack).
func (r Result) SlowVictim(l Limits) bool {
	return r.Err == nil && r.Attacked.P99 > r.victimBound(l)
}

func (r Result) victimBound(l Limits) time.Duration {
	return time.Duration(l.Ratio*float64(r.Quiet.P99)) + l.Slack
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// Run measures one attack: its payload is made first, then the server's
// CPU time and resident set are sampled from just before its requests
// until the server is idle again (Window at least), the victim's calls
// over that time are its latency under attack, and then the process is
// checked alive and every write the victim had acknowledged is looked up
// in the store. A server that died is started again for the next attack.
func (h *Harness) Run(ctx context.Context, a Attack) Result {
	r := Result{Name: a.Name, Requests: max(a.Requests, 1), Scale: a.Scale, Quiet: h.quiet}
	if r.Scale == 0 {
		r.Scale = 1
	}
	srv := h.server()
	pid := srv.cmd.Process.Pid
	prepStart := time.Now()
	p, err := a.prepare(ctx, h)
	r.Prepare = time.Since(prepStart)
	if err != nil {
		r.Err = err
		return r
	}
	defer func() {
		if p.cleanup != nil {
			p.cleanup()
		}
	}()
	r.Bytes = p.bytes
	h.settle(pid, time.Time{}, 5*time.Second) // the preparation's dials, if any

	rss0, _, err := memStatus(pid)
	if err != nil {
		r.Err = err
		return r
	}
	r.RSSBefore = rss0
	peakReset := resetPeak(pid)
	cpu0, err := cpuTime(pid)
	if err != nil {
		r.Err = err
		return r
	}
	t0 := time.Now()
	var maxRSS int64
	var overRSS bool
	lastCPU := cpu0 // the last sample, should the process die
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the peak, where the kernel keeps none (or past a reset)
		defer close(sampled)
		for {
			if c, err := cpuTime(pid); err == nil {
				lastCPU = c
			}
			if rss, _, err := memStatus(pid); err == nil {
				maxRSS = max(maxRSS, rss)
				if rss > h.opts.MaxRSS && !overRSS {
					overRSS = true
					srv.cmd.Process.Kill()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	actx, cancel := context.WithTimeout(ctx, h.opts.AttackTimeout)
	r.Outcome, err = p.fire(actx)
	cancel()
	if p.sent != nil {
		r.Requests = max(int(p.sent.Load()), 1)
	}
	r.Answered = !errors.Is(err, errNoAnswer)
	if err != nil && r.Answered {
		r.Outcome = strings.TrimSpace(r.Outcome + " (" + err.Error() + ")")
	}
	r.Settled = h.settle(pid, t0, h.opts.SettleTimeout)
	t1 := time.Now()
	cpu1, cerr := cpuTime(pid)
	_, hwm, merr := memStatus(pid)
	close(stop)
	<-sampled
	r.Wall = t1.Sub(t0)
	if cerr != nil {
		cpu1 = lastCPU
	}
	r.CPU = max(0, cpu1-cpu0-time.Duration(h.idleRate*float64(r.Wall)))
	peak := maxRSS
	if merr == nil && peakReset {
		peak = max(peak, hwm)
	}
	r.PeakGrowth = max(0, peak-rss0)
	h.waitVictimPast(t1, victimTimeout+5*time.Second)
	r.Attacked = h.latency(t0, t1)

	if p.cleanup != nil {
		p.cleanup()
		p.cleanup = nil
	}
	if overRSS {
		r.Alive, r.Exit = false, fmt.Sprintf("killed by the harness at %.0f MiB resident (its ceiling is %.0f MiB)", mib(maxRSS), mib(h.opts.MaxRSS))
	} else {
		r.Alive, r.Exit = h.alive(srv)
	}
	if r.Alive && !r.Settled {
		r.Killed = fmt.Sprintf("still busy %v after the attack began", r.Wall.Round(time.Millisecond))
	}
	if r.Alive && r.Killed == "" {
		h.settle(pid, time.Time{}, h.opts.SettleTimeout) // the cleanup's work is not the next attack's
	}
	if r.Alive && r.Killed == "" {
		r.Recovery, r.AttackerRecovery = h.probe(ctx, h.victim), h.probe(ctx, h.attacker)
	}
	r.Acked, r.Lost, err = h.lost(ctx)
	if err != nil {
		r.Err = err
	}
	if !r.Alive || r.Killed != "" {
		h.opts.logf("%s: the server is gone or stuck (%s%s); starting another", a.Name, r.Exit, r.Killed)
		if serr := h.restart(ctx, srv); serr != nil && r.Err == nil {
			r.Err = serr
		}
	}
	h.opts.logf("%s: CPU %.2f s, peak RSS +%.1f MiB, victim p99 %v (%.1f×, max %v); prepared in %v, measured over %v; new sessions after it: victim %v, attacker %v; %s",
		a.Name, r.CPU.Seconds(), mib(r.PeakGrowth), r.Attacked.P99.Round(time.Microsecond), r.Ratio(), r.Attacked.Max.Round(time.Millisecond),
		r.Prepare.Round(time.Millisecond), r.Wall.Round(time.Millisecond), r.Recovery.Round(time.Millisecond), r.AttackerRecovery.Round(time.Millisecond), r.Outcome)
	return r
}

// settle waits until the server's CPU use is back to its idle rate for
// a second, and at least until since+Window; it reports whether that
// happened within d. (A shorter calm let the end of a batch's calls,
// answered to a client that had gone, spill into the next attack.)
func (h *Harness) settle(pid int, since time.Time, d time.Duration) bool {
	const step = 100 * time.Millisecond
	deadline := time.Now().Add(d)
	if !since.IsZero() {
		deadline = deadline.Add(h.opts.Window)
	}
	prev, err := cpuTime(pid)
	if err != nil {
		return false
	}
	calm := 0
	for time.Now().Before(deadline) {
		time.Sleep(step)
		now, err := cpuTime(pid)
		if err != nil {
			return false
		}
		// A tick or two of slack beyond the idle rate (10 ms units).
		if now-prev <= time.Duration(h.idleRate*float64(step))+2*clockTick {
			calm++
		} else {
			calm = 0
		}
		prev = now
		if calm >= 10 && (since.IsZero() || time.Since(since) >= h.opts.Window) {
			return true
		}
	}
	return false
}

// alive reports whether srv is running and answers /healthz.
func (h *Harness) alive(srv *server) (bool, string) {
	select {
	case <-srv.done:
		return false, fmt.Sprintf("exited: %v%s", srv.err, h.logTail())
	default:
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(srv.base + "/healthz")
	if err != nil {
		select {
		case <-srv.done:
			return false, fmt.Sprintf("exited: %v%s", srv.err, h.logTail())
		default:
		}
		return false, "running, but /healthz failed: " + err.Error()
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("running, but /healthz answered %d", resp.StatusCode)
	}
	return true, ""
}

// restart kills what is left of srv and starts another server.
func (h *Harness) restart(ctx context.Context, srv *server) error {
	srv.cmd.Process.Kill()
	<-srv.done
	h.mu.Lock()
	h.restarts++
	h.mu.Unlock()
	return h.start(ctx)
}

// lost counts the victim's acknowledged writes missing from the store.
func (h *Harness) lost(ctx context.Context) (acked, lost int, err error) {
	h.mu.Lock()
	marks := slices.Clone(h.acked)
	h.mu.Unlock()
	st, err := memory.Open(ctx, h.db, nil)
	if err != nil {
		return len(marks), 0, fmt.Errorf("abuse: open the store to look for the victim's writes: %w", err)
	}
	defer st.Close()
	got, err := st.Agent(VictimAgent).Block(VictimLabel).Render(ctx)
	if err != nil {
		return len(marks), 0, fmt.Errorf("abuse: read the victim's block: %w", err)
	}
	for _, m := range marks {
		if !strings.Contains(got, m) {
			lost++
		}
	}
	return len(marks), lost, nil
}

// Final is the state after the last attack.
type Final struct {
	Acked, Lost int
	Restarts    int // servers started again after one died
	Alive       bool
	Exit        string
	Victim      Latency // every victim call of the run
}

// Close stops the victim, checks the server is alive and every
// acknowledged write is in the store, and stops the server (SIGTERM).
func (h *Harness) Close() (Final, error) {
	var f Final
	if h.stopVictim != nil {
		h.stopVictim()
		<-h.victimDone
		h.stopVictim = nil
	}
	srv := h.server()
	if srv == nil {
		return f, nil
	}
	f.Alive, f.Exit = h.alive(srv)
	var err error
	f.Acked, f.Lost, err = h.lost(context.Background())
	h.mu.Lock()
	f.Restarts = h.restarts
	f.Victim = latencyOf(h.samples)
	h.mu.Unlock()
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-srv.done:
	case <-time.After(15 * time.Second):
		srv.cmd.Process.Kill()
		<-srv.done
	}
	return f, err
}
