package ui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

// clipped is text that may have been cut for display.
type clipped struct {
	Text  string
	Total int // characters in the whole text
	Cut   bool
}

func clip(s string, n int) clipped {
	r := []rune(s)
	if len(r) <= n {
		return clipped{Text: s, Total: len(r)}
	}
	return clipped{Text: string(r[:n]), Total: len(r), Cut: true}
}

// Rest is how many characters were cut.
func (c clipped) Rest() int { return c.Total - len([]rune(c.Text)) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// flash turns the ?done= code of a redirect after a POST into a message.
// Only fixed codes are accepted, so a link cannot put words on the page.
func flash(q url.Values) string {
	id := q.Get("id")
	if _, err := strconv.ParseInt(id, 10, 64); err != nil {
		id = ""
	}
	switch q.Get("done") {
	case "approved":
		return "Proposal #" + id + " approved and applied."
	case "rejected":
		return "Proposal #" + id + " rejected."
	case "restored":
		return "Restored as a new change."
	case "restored-system":
		return "Restored as a new change, recorded as by the system: the store attributes writes only to the owner, a sharee or the system, and this block's owner may not merge changes into it."
	}
	return ""
}

// --- overview and agent pages ---

type overviewData struct {
	Agents  []agentBlocks
	Single  bool
	Pending int
}

func (s *Server) handleOverview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	agents, ok := s.agentList(w, r, "")
	if !ok {
		return
	}
	sh, err := s.sharedWith(ctx, agents)
	if err != nil {
		s.failErr(w, r, "List shares", err)
		return
	}
	var d overviewData
	for _, a := range agents {
		ab, err := s.overview(ctx, a, sh)
		if err != nil {
			s.failErr(w, r, "List blocks", err)
			return
		}
		d.Agents = append(d.Agents, ab)
		d.Pending += ab.Pending
	}
	s.render(w, r, http.StatusOK, "overview", page{Title: "Agents and blocks", Nav: "agents", LiveAll: true, Flash: flash(r.URL.Query()), Data: d})
}

func (s *Server) handleAgent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	agent := r.PathValue("agent")
	agents, ok := s.agentList(w, r, agent)
	if !ok {
		return
	}
	// Whom this agent's blocks are shared with takes every agent's shares.
	sh, err := s.sharedWith(ctx, agents)
	if err != nil {
		s.failErr(w, r, "List shares", err)
		return
	}
	ab, err := s.overview(ctx, agent, sh)
	if err != nil {
		s.failErr(w, r, "List blocks", err)
		return
	}
	d := overviewData{Agents: []agentBlocks{ab}, Single: true, Pending: ab.Pending}
	s.render(w, r, http.StatusOK, "overview", page{Title: "Agent " + agent, Nav: "agents", Live: []string{agent}, Data: d})
}

// --- block page ---

type changeRow struct {
	blocks.Change
	Target  string
	Short   string
	Diff    []span
	Changed bool
	DiffErr string
	Index   int // 1-based position in the whole history
}

type blockData struct {
	Info       blocks.Info
	Kind       string
	SchemaJSON string
	Chars      int
	Limit      int
	Content    clipped
	At         *changeRow
	AtContent  clipped
	Restorable bool
	// LinkDiffs: the block is large; each change links to its diff
	// instead of showing it.
	LinkDiffs  bool
	Changes    []changeRow
	Total      int
	Page       int
	Pages      int
	SharedWith []shareRow
	Pending    []proposalRow
}

func (s *Server) handleBlock(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	owner, label := r.PathValue("owner"), r.PathValue("label")
	agents, ok := s.agentList(w, r, owner)
	if !ok {
		return
	}
	doc, err := s.docFor(ctx, owner, label)
	if err != nil {
		s.failErr(w, r, "Block", err)
		return
	}
	q := r.URL.Query()
	info := doc.Info()
	d := blockData{Info: info, Chars: doc.Size(), Limit: doc.CharLimit()}
	if info.Schema != nil {
		d.Kind = string(info.Schema.Kind())
		if b, err := schema.Marshal(info.Schema); err == nil {
			d.SchemaJSON = string(b)
		}
	}
	limit := s.opts.MaxChars
	if q.Get("full") == "1" {
		limit = math.MaxInt
	}
	d.Content = clip(doc.Render(), limit)

	// The store's history spans the block's epochs (a rebase archives the
	// old history); its changes carry their epoch.
	hist, err := s.store.Agent(owner).Shared(owner, label).History(ctx)
	if err != nil {
		s.failErr(w, r, "Block history", err)
		return
	}
	d.Total = len(hist)
	vs := s.versions(owner, label, doc)
	d.LinkDiffs = vs.large
	if at := q.Get("at"); at != "" {
		i := slices.IndexFunc(hist, func(c blocks.Change) bool { return c.Hash == at })
		if i < 0 {
			s.fail(w, r, http.StatusNotFound, "Not found", fmt.Sprintf("Block %q of agent %q has no change %q.", label, owner, at))
			return
		}
		cr := describeChange(hist, i)
		d.At = &cr
		var v string
		err := vs.run(ctx, func(ctx context.Context) (err error) {
			v, err = vs.at(ctx, []string{at})
			return err
		})
		if err != nil {
			s.failErr(w, r, "As-of view", err)
			return
		}
		d.AtContent = clip(v, limit)
		d.Restorable = info.Type != blocks.Log && i != len(hist)-1
	}
	per := s.opts.HistoryPage
	d.Pages = max(1, (len(hist)+per-1)/per)
	d.Page, _ = strconv.Atoi(q.Get("page"))
	d.Page = min(max(d.Page, 1), d.Pages)
	// Newest first: page 1 holds the last per changes.
	hi := len(hist) - (d.Page-1)*per
	lo := max(0, hi-per)
	for i := hi - 1; i >= lo; i-- {
		cr := describeChange(hist, i)
		if !vs.large {
			// A small block: every version is cheap, diff inline.
			if err := s.diffChange(ctx, vs, hist, i, &cr); err != nil {
				cr.DiffErr = err.Error()
			}
		}
		d.Changes = append(d.Changes, cr)
	}
	sh, err := s.sharedWith(ctx, agents)
	if err != nil {
		s.failErr(w, r, "Shares", err)
		return
	}
	d.SharedWith = sh.with[blockKey{owner, label}]
	ps, err := s.store.Agent(owner).Block(label).Proposals(ctx)
	if err != nil {
		s.failErr(w, r, "Proposals", err)
		return
	}
	for _, p := range ps {
		if p.Status == "pending" {
			d.Pending = append(d.Pending, s.proposalRow(ctx, p))
		}
	}
	s.render(w, r, http.StatusOK, "block", page{Title: "Block " + label + " of " + owner, Nav: "agents",
		Live: []string{owner}, Flash: flash(q), Data: d})
}

// describeChange is the row of change i of hist, without its diff.
func describeChange(hist []blocks.Change, i int) changeRow {
	c := hist[i]
	cr := changeRow{Change: c, Short: c.Hash[:min(12, len(c.Hash))], Index: i + 1}
	cr.Target = c.Section
	if c.Field != "" {
		cr.Target = strings.Trim(cr.Target+"."+c.Field, ".")
	}
	return cr
}

// diffChange fills in the diff of change i of hist: the block rendered
// before it (at its dependencies) against after it. A version that cannot
// be rendered is shown as the row's error; only a context error is
// returned.
func (s *Server) diffChange(ctx context.Context, vs *versions, hist []blocks.Change, i int, cr *changeRow) error {
	deps := hist[i].Deps
	if hist[i].Op == blocks.OpRebase && i > 0 {
		// A new epoch starts from the value the last epoch ended with.
		deps = epochHeads(hist[:i], hist[i-1].Epoch)
	}
	before, err1 := vs.at(ctx, deps)
	after, err2 := vs.at(ctx, []string{hist[i].Hash})
	if err := errors.Join(err1, err2); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return err
		}
		cr.DiffErr = err.Error()
		return nil
	}
	cr.Diff = diffText(before, after, 60)
	cr.Changed = changed(cr.Diff)
	cr.Diff = clipSpans(cr.Diff, s.opts.MaxChars)
	return nil
}

type changeData struct {
	Info   blocks.Info
	Change changeRow
	Total  int
}

// handleChange shows one change of a block with its diff: how a large
// block's page offers its diffs, one request each.
func (s *Server) handleChange(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	owner, label, hash := r.PathValue("owner"), r.PathValue("label"), r.PathValue("hash")
	if _, ok := s.agentList(w, r, owner); !ok {
		return
	}
	doc, err := s.docFor(ctx, owner, label)
	if err != nil {
		s.failErr(w, r, "Block", err)
		return
	}
	hist, err := s.store.Agent(owner).Shared(owner, label).History(ctx)
	if err != nil {
		s.failErr(w, r, "Block history", err)
		return
	}
	i := slices.IndexFunc(hist, func(c blocks.Change) bool { return c.Hash == hash })
	if i < 0 {
		s.fail(w, r, http.StatusNotFound, "Not found", fmt.Sprintf("Block %q of agent %q has no change %q.", label, owner, hash))
		return
	}
	d := changeData{Info: doc.Info(), Change: describeChange(hist, i), Total: len(hist)}
	vs := s.versions(owner, label, doc)
	err = vs.run(ctx, func(ctx context.Context) error {
		return s.diffChange(ctx, vs, hist, i, &d.Change)
	})
	if err != nil {
		s.failErr(w, r, "Change", err)
		return
	}
	s.render(w, r, http.StatusOK, "change", page{Title: fmt.Sprintf("Change #%d of %s", i+1, label), Nav: "agents",
		Live: []string{owner}, Data: d})
}

// epochHeads returns the heads an epoch ended with: its changes (in hist)
// that no other change of the epoch depends on.
func epochHeads(hist []blocks.Change, epoch int64) []string {
	used := map[string]bool{}
	for _, c := range hist {
		if c.Epoch == epoch {
			for _, d := range c.Deps {
				used[d] = true
			}
		}
	}
	var heads []string
	for _, c := range hist {
		if c.Epoch == epoch && !used[c.Hash] {
			heads = append(heads, c.Hash)
		}
	}
	sort.Strings(heads)
	return heads
}

// clipSpans bounds the text a diff shows.
func clipSpans(spans []span, n int) []span {
	total := 0
	for i, sp := range spans {
		r := []rune(sp.Text)
		if sp.Kind != '~' && total+len(r) > n {
			out := append(spans[:i:i], span{sp.Kind, string(r[:max(0, n-total)])}, span{'~', "diff cut: open the as-of view for the whole text"})
			return out
		}
		total += len(r)
	}
	return spans
}

// handleRestore makes the block's content what it was at a change, as a
// new change attributed to the person.
func (s *Server) handleRestore(w http.ResponseWriter, r *http.Request) {
	if !s.checkPost(w, r) {
		return
	}
	ctx := r.Context()
	owner, label := r.PathValue("owner"), r.PathValue("label")
	at := r.PostForm.Get("at")
	if _, ok := s.agentList(w, r, owner); !ok {
		return
	}
	doc, err := s.docFor(ctx, owner, label)
	if err != nil {
		s.failErr(w, r, "Restore", err)
		return
	}
	if at == "" {
		s.fail(w, r, http.StatusBadRequest, "Restore failed", "No change to restore was named.")
		return
	}
	done, err := Restore(ctx, s.store, doc, at, s.Person())
	if err != nil {
		s.failErr(w, r, "Restore", err)
		return
	}
	s.live.poke()
	http.Redirect(w, r, blockURL(s.base, owner, label)+"?done="+done, http.StatusSeeOther)
}

// Restore makes owner's block doc read as it did at change at, as one new
// change attributed to person ("human:NAME"), written through the store.
//
// The store takes writes only from the block's owner, a sharee or the
// system, so a person cannot write as themselves directly. The restore is
// made on a private fork of the block, then merged into the block as the
// owner, recorded as by the person (memory.Block.MergeAs): validated, persisted, seen by every
// process. The history shows it as the person's merge (a merged change's
// commit message names no one). A restore is rarely an append, which
// is all a merge lets an Append owner make, so the owner must hold
// ReadWrite or Admin; for a block whose owner holds less (ReadOnly,
// Partner, Human, Append) the restore is made by the system instead, and
// the returned code says so ("restored-system" instead of "restored").
func Restore(ctx context.Context, store *memory.Store, doc *blocks.Document, at, person string) (string, error) {
	info := doc.Info()
	// The change may be in an archived epoch: the store finds it.
	old, err := store.Agent(info.Owner).Shared(info.Owner, info.Label).At(ctx, []string{at})
	if err != nil {
		return "", err
	}
	if info.Permission < blocks.ReadWrite {
		if err := doc.WithContext(ctx).RestoreFrom(old, blocks.System); err != nil {
			return "", err
		}
		return "restored-system", store.Agent(info.Owner).Block(info.Label).Persist(ctx)
	}
	fork, err := doc.Fork()
	if err != nil {
		return "", fmt.Errorf("ui: restore %q of %q: fork: %w", info.Label, info.Owner, err)
	}
	if err := fork.View(person, blocks.Admin).RestoreFrom(old, blocks.Agent); err != nil {
		return "", err
	}
	data, err := fork.Save()
	if err != nil {
		return "", fmt.Errorf("ui: restore %q of %q: save the fork: %w", info.Label, info.Owner, err)
	}
	if err := store.Agent(info.Owner).Block(info.Label).MergeAs(ctx, data, person); err != nil {
		return "", err
	}
	return "restored", nil
}

// blockURL is the path of a block's page in an app mounted at base.
func blockURL(base, owner, label string) string {
	return base + "/blocks/" + url.PathEscape(owner) + "/" + url.PathEscape(label)
}

// --- proposals ---

type proposalRow struct {
	memory.Proposal
	Diff    []span
	DiffErr string
	// Sources are a pending merge's source entries (Proposal.Merge), in
	// its order, shown beside the merged text.
	Sources []mergeSource
}

// mergeSource is one source entry of a merge proposal; Err says why it
// cannot be shown (deleted, or no longer live: approving then fails).
type mergeSource struct {
	ID      int64
	Content string
	Tags    []string
	Err     string
}

func (s *Server) proposalRow(ctx context.Context, p memory.Proposal) proposalRow {
	pr := proposalRow{Proposal: p}
	if p.Status != "pending" {
		return pr
	}
	if p.Merge != nil {
		arch := s.store.Agent(p.Owner).Archival()
		for _, id := range p.Merge.Sources {
			src := mergeSource{ID: id}
			e, err := arch.Get(ctx, id)
			switch {
			case err != nil:
				src.Err = err.Error()
			case e.ValidTo != nil:
				src.Err = "no longer live: approving this merge fails"
				fallthrough
			default:
				src.Content, src.Tags = e.Content, e.Tags
			}
			pr.Sources = append(pr.Sources, src)
		}
		return pr
	}
	var before, after string
	err := func() error {
		doc, err := s.store.Agent(p.Owner).Block(p.Label).Doc(ctx)
		if err != nil {
			return err
		}
		// The preview forks the block: a full copy, heavy for a large one,
		// so a large block's previews are kept for as long as the block
		// does not change (live pages fetch the queue again on every
		// change anywhere).
		vs := s.versions(p.Owner, p.Label, doc)
		key := fmt.Sprintf("proposal\x00%d\x00%s\x00", p.ID, strings.Join(doc.Heads(), ","))
		if vs.large {
			b, ok1 := s.renders.get(key + "before")
			a, ok2 := s.renders.get(key + "after")
			if ok1 && ok2 {
				before, after = b, a
				return nil
			}
		}
		return vs.run(ctx, func(ctx context.Context) (err error) {
			before, after, err = ProposalDiff(ctx, s.store, p)
			if err == nil && vs.large {
				s.renders.put(key+"before", before)
				s.renders.put(key+"after", after)
			}
			return err
		})
	}()
	if err != nil {
		pr.DiffErr = err.Error()
		return pr
	}
	pr.Diff = clipSpans(diffText(before, after, 60), s.opts.MaxChars)
	return pr
}

type proposalsData struct {
	Pending []proposalRow
	Decided []proposalRow
}

func (s *Server) handleProposals(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	agents, ok := s.agentList(w, r, "")
	if !ok {
		return
	}
	all, err := Proposals(ctx, s.store, agents, false)
	if err != nil {
		s.failErr(w, r, "List proposals", err)
		return
	}
	var d proposalsData
	for _, p := range all {
		if p.Status == "pending" {
			d.Pending = append(d.Pending, s.proposalRow(ctx, p))
		}
	}
	// The most recently decided, newest first.
	slices.SortFunc(all, func(a, b memory.Proposal) int { return b.DecidedAt.Compare(a.DecidedAt) })
	for _, p := range all {
		if p.Status != "pending" && len(d.Decided) < 20 {
			d.Decided = append(d.Decided, proposalRow{Proposal: p})
		}
	}
	s.render(w, r, http.StatusOK, "proposals", page{Title: "Proposals", Nav: "proposals", LiveAll: true, Flash: flash(r.URL.Query()), Data: d})
}

func (s *Server) handleDecide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.checkPost(w, r) {
			return
		}
		ctx := r.Context()
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil {
			s.fail(w, r, http.StatusNotFound, "Not found", fmt.Sprintf("%q is not a proposal number.", r.PathValue("id")))
			return
		}
		what, done := "Reject", "rejected"
		if approve {
			what, done = "Approve", "approved"
			err = s.store.Agent(s.Person()).ApproveProposal(ctx, id)
		} else {
			err = s.store.Agent(s.Person()).RejectProposal(ctx, id, strings.TrimSpace(r.PostForm.Get("reason")))
		}
		if err != nil {
			s.failErr(w, r, what+" proposal", err)
			return
		}
		s.live.poke()
		back := s.path("/proposals")
		if ret := r.PostForm.Get("return"); strings.HasPrefix(ret, s.path("/blocks/")) && isLocalPath(ret) {
			back = ret
		}
		http.Redirect(w, r, back+"?done="+done+"&id="+strconv.FormatInt(id, 10), http.StatusSeeOther)
	}
}

// --- search ---

type searchData struct {
	Agents  []string
	Query   string
	Agent   string
	Mode    string
	Modes   []string
	Types   map[string]bool
	Limit   int
	Ran     bool
	Results []resultRow
	Error   string
}

type resultRow struct {
	search.Result
	Parts   []span // the snippet: '=' text, '+' a highlighted term
	Explain []string
	Link    string
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	// An unknown agent is a 404 only once there is a query to run.
	want := q.Get("agent")
	if strings.TrimSpace(q.Get("q")) == "" {
		want = ""
	}
	agents, ok := s.agentList(w, r, want)
	if !ok {
		return
	}
	d := searchData{Agents: agents, Query: q.Get("q"), Agent: q.Get("agent"), Mode: q.Get("mode"),
		Modes: []string{"auto", "fts", "vector", "hybrid"}, Types: map[string]bool{}}
	if d.Mode == "" {
		d.Mode = "auto"
	}
	for _, t := range q["type"] {
		d.Types[t] = true
	}
	if len(d.Types) == 0 {
		d.Types = map[string]bool{"blocks": true, "archival": true, "messages": true}
	}
	d.Limit, _ = strconv.Atoi(q.Get("limit"))
	if d.Limit <= 0 || d.Limit > 100 {
		d.Limit = 20
	}
	p := page{Title: "Search", Nav: "search", Data: &d}
	if strings.TrimSpace(d.Query) == "" {
		s.render(w, r, http.StatusOK, "search", p)
		return
	}
	mode, err := search.ParseMode(d.Mode)
	if err != nil {
		d.Error = err.Error()
		s.render(w, r, http.StatusBadRequest, "search", p)
		return
	}
	var cts []search.ContentType
	for t := range d.Types {
		ct, err := search.ParseContentType(t)
		if err != nil {
			d.Error = err.Error()
			s.render(w, r, http.StatusBadRequest, "search", p)
			return
		}
		cts = append(cts, ct)
	}
	opts := search.NewOptions().Mode(mode).Limit(d.Limit).ContentTypes(cts...)
	var res []search.Result
	if d.Agent == "" {
		res, err = s.store.SearchAll(ctx, d.Query, opts)
	} else {
		res, err = s.store.Agent(d.Agent).Search(ctx, d.Query, opts)
	}
	d.Ran = true
	if err != nil {
		// A query the engine refuses (no letters, no embedder for vector
		// mode) is the person's to fix, not a server failure.
		d.Error = err.Error()
		s.render(w, r, http.StatusOK, "search", p)
		return
	}
	for _, res := range res {
		rr := resultRow{Result: res, Parts: highlight(res.Snippet), Explain: explain(res)}
		if res.Type == search.Blocks && res.Label != "" {
			rr.Link = blockURL(s.base, res.Owner, res.Label)
		}
		d.Results = append(d.Results, rr)
	}
	s.render(w, r, http.StatusOK, "search", p)
}

// highlight splits a snippet at its «term» markers.
func highlight(snippet string) []span {
	var out []span
	for snippet != "" {
		i := strings.Index(snippet, search.HighlightStart)
		if i < 0 {
			out = append(out, span{'=', snippet})
			break
		}
		j := strings.Index(snippet[i+len(search.HighlightStart):], search.HighlightEnd)
		if j < 0 {
			out = append(out, span{'=', snippet})
			break
		}
		if i > 0 {
			out = append(out, span{'=', snippet[:i]})
		}
		start := i + len(search.HighlightStart)
		out = append(out, span{'+', snippet[start : start+j]})
		snippet = snippet[start+j+len(search.HighlightEnd):]
	}
	return out
}

// explain says in words where a result's score came from.
func explain(r search.Result) []string {
	src := r.Source
	var out []string
	if src.FTSRank > 0 {
		out = append(out, fmt.Sprintf("full-text rank %d (BM25 %.4g; lower is better)", src.FTSRank, src.BM25))
	}
	if src.FTSNorm > 0 {
		out = append(out, fmt.Sprintf("full-text share %.4f (BM25 over the best score the query could get in its content type, or over a quarter of the best in any content type searched, whichever is higher)", src.FTSNorm))
	}
	if src.VectorRank > 0 {
		out = append(out, fmt.Sprintf("vector rank %d (cosine distance %.4f, similarity %.4f)", src.VectorRank, src.Distance, 1-src.Distance))
	}
	if src.Fused > 0 {
		w := ""
		if src.VectorWeight > 0 {
			w = fmt.Sprintf(", vector weight %.3g", src.VectorWeight)
		}
		out = append(out, fmt.Sprintf("reciprocal-rank fusion %.5f = Σ weight/(%d+rank)%s", src.Fused, search.RRFK, w))
	}
	if src.RerankRank > 0 {
		out = append(out, fmt.Sprintf("reranked %d (reranker score %.4g)", src.RerankRank, src.Rerank))
	}
	switch {
	case src.RerankRank > 0:
		out = append(out, "score = reranker score")
	case src.Fused > 0:
		out = append(out, "score = fused value")
	case src.VectorRank > 0 && src.FTSRank == 0:
		out = append(out, "score = 1 − cosine distance")
	case src.FTSNorm > 0:
		out = append(out, "score = share of the best full-text score")
	case src.FTSRank > 0:
		out = append(out, "score = −BM25")
	}
	return out
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
