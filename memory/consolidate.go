package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/engram-go/engram/search"
)

// Consolidation: a pass over an agent's archival memory that finds
// near-duplicate entries (MinHash over the search index's terms, banded
// for locality-sensitive hashing, each candidate pair verified by the
// exact Jaccard similarity of the two entries' term sets) and turns each
// cluster into a merge proposal (see docs/consolidation.md).

// ConsolidateOptions tune Consolidate. The zero value (or nil) is the
// defaults.
type ConsolidateOptions struct {
	// After resumes a pass: the round examines the live entries with ids
	// above it (0: from the start; ConsolidateReport.Next is the next
	// round's). Each examined entry is compared with every live entry of
	// its conversation, older ones included.
	After int64
	// MaxEntries bounds the entries a round examines (default 10,000).
	MaxEntries int
	// Threshold is the Jaccard similarity of two entries' term sets from
	// which they are near-duplicates (default 0.8, at most 1).
	Threshold float64
	// MaxClusterSize bounds a cluster (default 32, at most
	// MaxMergeSources): a larger one is reported, not proposed
	// (ConsolidateReport.Skipped).
	MaxClusterSize int
	// DryRun reports the clusters and proposes and applies nothing.
	DryRun bool
	// ApplyExact applies the merges of exact clusters (same normalised
	// text) at once, approved by "system:consolidate", instead of
	// proposing them. Near-exact clusters (the same terms up to order,
	// punctuation, case and filler words) are still proposed: word order
	// carries meaning ("Alice owes Bob", "Bob owes Alice").
	ApplyExact bool
	// Model, when set, is asked about each near cluster (and about blocks
	// close to their character limit): it may propose a merged text, that
	// the newest entry supersedes the others, or nothing. Its answers are
	// checked and only ever become proposals.
	Model ConsolidationModel
	// MaxModelTokens bounds the tokens (estimated as bytes / 4) a round
	// sends to the model (default 32,000); clusters past it are proposed
	// without the model.
	MaxModelTokens int
	// BlockFill is the share of its character limit from which a block is
	// offered to the model for a rewrite (default 0.9; negative: never).
	BlockFill float64
}

func (o *ConsolidateOptions) withDefaults() ConsolidateOptions {
	var out ConsolidateOptions
	if o != nil {
		out = *o
	}
	if out.MaxEntries <= 0 {
		out.MaxEntries = 10000
	}
	if out.Threshold <= 0 || out.Threshold > 1 {
		out.Threshold = 0.8
	}
	if out.MaxClusterSize <= 1 {
		out.MaxClusterSize = 32
	}
	out.MaxClusterSize = min(out.MaxClusterSize, MaxMergeSources)
	if out.MaxModelTokens <= 0 {
		out.MaxModelTokens = 32000
	}
	if out.BlockFill == 0 {
		out.BlockFill = 0.9
	}
	return out
}

// Kinds of consolidation clusters (ArchivalMerge.Kind).
const (
	MergeExact      = "exact"      // equal normalised text
	MergeNearExact  = "near-exact" // equal terms up to order and filler words
	MergeNear       = "near"       // term sets similar past the threshold
	MergeCorrection = "correction" // the model: the newest supersedes the others
)

// ArchivalMerge is a proposed merge of archival entries: approving it
// stores Content as a new entry (Tags and Metadata, Metadata's
// "derived_from" listing Sources) and supersedes every source with it,
// all in one transaction, provided every source is still live.
type ArchivalMerge struct {
	Sources    []int64        `json:"sources"`
	Content    string         `json:"content"`
	Tags       []string       `json:"tags,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
	Kind       string         `json:"kind"`
	Similarity float64        `json:"similarity"`
	Model      string         `json:"model,omitempty"`
}

// ConsolidateReport is what a round found and did.
type ConsolidateReport struct {
	Agent    string
	Examined int   // entries examined
	Live     int   // live entries compared against
	Next     int64 // After for the next round; 0 when this round reached the end
	Last     int64 // the highest id the round examined (0: none)
	Clusters []ConsolidationCluster
	// Skipped are clusters larger than MaxClusterSize: reported, neither
	// proposed nor applied.
	Skipped     []ConsolidationCluster
	Proposals   []int64 // proposals made
	Applied     int     // merges applied (ApplyExact)
	ModelTokens int     // estimated tokens sent to the model
	// ModelErrors are the model's failures and refused answers: each left
	// its cluster or block as it was (proposed without the model, or not).
	ModelErrors []string
	Elapsed     time.Duration
}

// ConsolidationCluster is one cluster: its merge and, once proposed or
// applied, the proposal or the merged entry.
type ConsolidationCluster struct {
	Merge      ArchivalMerge
	Texts      []string // the sources' contents, in Merge.Sources' order
	ProposalID int64    `json:",omitempty"`
	MergedID   int64    `json:",omitempty"`
	Reason     string   `json:",omitempty"`
}

// ConsolidationModel is what consolidation asks a language model
// (compress.OpenAIConsolidator is one over an OpenAI-compatible API).
type ConsolidationModel interface {
	// Name names the model in proposals' provenance.
	Name() string
	// MergeEntries answers about a cluster of near-duplicate entries,
	// oldest first.
	MergeEntries(ctx context.Context, entries []ArchivalEntry) (ModelMerge, error)
	// RewriteBlock returns a shorter text for a block near its character
	// limit, and why.
	RewriteBlock(ctx context.Context, label, text string, limit int) (text2, reason string, err error)
}

// ModelMerge is a model's answer about a cluster.
type ModelMerge struct {
	// Action is "merge" (Content holds the merged text), "supersede" (the
	// entry Keep, one of the cluster, supersedes the others) or "keep"
	// (leave them).
	Action  string
	Content string
	Keep    int64
	Reason  string
}

// ErrModel is wrapped by the errors ConsolidateReport.ModelErrors
// records and by a refused model answer.
var ErrModel = errors.New("memory: consolidation model")

// fillers are words a near-exact comparison ignores: they carry no fact.
var fillers = map[string]bool{}

func init() {
	for _, w := range []string{"um", "uh", "er", "like", "actually", "basically", "honestly", "really", "just", "well", "so", "anyway", "literally", "oh"} {
		search.Terms(w, func(t string) { fillers[t] = true })
	}
}

// sigEntry is an entry as consolidation compares it.
type sigEntry struct {
	e     ArchivalEntry
	key   string // stored content key
	conv  string
	terms []string // distinct terms, fillers removed, sorted
	sig   [minhashK]uint64
}

const (
	maxBucket    = 64
	minhashK     = 64
	minhashBands = 16
	minhashRows  = minhashK / minhashBands
)

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// sign fills s's terms and MinHash signature.
func (s *sigEntry) sign() {
	seen := map[string]bool{}
	search.Terms(s.e.Content, func(t string) {
		if !fillers[t] && !seen[t] {
			seen[t] = true
			s.terms = append(s.terms, t)
		}
	})
	sort.Strings(s.terms)
	for i := range s.sig {
		s.sig[i] = ^uint64(0)
	}
	for _, t := range s.terms {
		h := fnv.New64a()
		h.Write([]byte(t))
		x := h.Sum64()
		for i := range s.sig {
			if v := splitmix(x ^ uint64(i)*0x9e3779b97f4a7c15); v < s.sig[i] {
				s.sig[i] = v
			}
		}
	}
}

// jaccard is the Jaccard similarity of two sorted term sets.
func jaccard(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	i, j, inter := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// Consolidate runs one round of consolidation over agent's archival
// memory (see ConsolidateOptions and docs/consolidation.md). A cancelled
// ctx stops the round between clusters: what was proposed or applied
// stays, and the report (returned with the error) says what.
func (c *Store) consolidate(ctx context.Context, agent string, opts *ConsolidateOptions) (*ConsolidateReport, error) {
	start := time.Now()
	o := opts.withDefaults()
	rep := &ConsolidateReport{Agent: agent}
	if err := c.checkOpen(ctx); err != nil {
		return rep, err
	}
	if err := checkAgent(agent); err != nil {
		return rep, err
	}
	if _, err := c.backfillKeys(ctx); err != nil {
		return rep, err
	}
	var any int
	if err := c.rdb.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM archival WHERE agent = ? LIMIT 1) x`, agent).Scan(&any); err != nil {
		return rep, fmt.Errorf("memory: consolidate %q: %w", agent, err)
	}
	if any == 0 {
		var blocks int
		_ = c.rdb.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM blocks WHERE owner = ? LIMIT 1) x`, agent).Scan(&blocks)
		if blocks == 0 {
			return rep, notFound("agent %q: no archival entries or blocks to consolidate", agent)
		}
	}
	// The round's window: MaxEntries live entries past After.
	var end int64
	err := c.rdb.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0), count(*) FROM (SELECT id FROM archival WHERE agent = ? AND valid_to IS NULL AND id > ? ORDER BY id LIMIT ?) w`,
		agent, o.After, o.MaxEntries).Scan(&end, &rep.Examined)
	if err != nil {
		return rep, fmt.Errorf("memory: consolidate %q: %w", agent, err)
	}
	if rep.Examined > 0 {
		rep.Last = end
	}
	if rep.Examined == o.MaxEntries {
		rep.Next = end
	}
	var entries []*sigEntry
	if rep.Examined > 0 {
		entries, err = c.liveEntries(ctx, agent, end)
		if err != nil {
			return rep, err
		}
	}
	rep.Live = len(entries)
	clusters := findClusters(entries, o.After, o.Threshold)
	for _, cl := range clusters {
		if len(cl) > o.MaxClusterSize {
			rep.Skipped = append(rep.Skipped, clusterOf(cl, MergeNear, 0))
			continue
		}
		rep.Clusters = append(rep.Clusters, classify(cl, o.Threshold))
	}
	defer func() { rep.Elapsed = time.Since(start) }()
	if o.DryRun {
		return rep, nil
	}
	pending, err := c.pendingMerges(ctx, agent)
	if err != nil {
		return rep, err
	}
	for i := range rep.Clusters {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("memory: consolidate %q: stopped after %d of %d clusters: %w", agent, i, len(rep.Clusters), err)
		}
		cl := &rep.Clusters[i]
		kind := cl.Merge.Kind
		prior := pending[sourcesKey(cl.Merge.Sources)]
		if o.ApplyExact && kind == MergeExact {
			// A pending proposal of the same merge is decided by it.
			id, err := c.applyMerge(ctx, agent, cl.Merge, prior, "system:consolidate")
			if err != nil {
				cl.Reason = err.Error()
				continue
			}
			cl.MergedID = id
			rep.Applied++
			continue
		}
		if prior != 0 {
			// Already awaiting a decision: not proposed again.
			cl.Reason = fmt.Sprintf("a merge of these entries is pending (proposal %d)", prior)
			continue
		}
		if kind == MergeNear && o.Model != nil && rep.ModelTokens < o.MaxModelTokens {
			c.askModel(ctx, o.Model, agent, cl, rep)
		}
		id, err := c.proposeMerge(ctx, agent, cl.Merge, cl.Reason)
		if err != nil {
			if errors.Is(err, ErrQuota) || errors.Is(err, ErrTooLarge) {
				cl.Reason = err.Error()
				continue
			}
			return rep, err
		}
		cl.ProposalID = id
		rep.Proposals = append(rep.Proposals, id)
	}
	if o.Model != nil && o.BlockFill > 0 && o.After == 0 {
		if err := c.proposeRewrites(ctx, agent, o, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// pendingMerges maps the sources (sourcesKey) of agent's pending
// merge_archival proposals to the proposal's id.
func (c *Store) pendingMerges(ctx context.Context, agent string) (map[string]int64, error) {
	rows, err := c.rdb.QueryContext(ctx, `SELECT id, args_json FROM proposals
		WHERE proposer = ? AND op = ? AND block_id IS NULL AND status = 'pending'`, agent, OpMergeArchival)
	if err != nil {
		return nil, fmt.Errorf("memory: consolidate %q: read pending merges: %w", agent, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id int64
		var args string
		if err := rows.Scan(&id, &args); err != nil {
			return nil, fmt.Errorf("memory: consolidate %q: read pending merges: %w", agent, err)
		}
		var m ArchivalMerge
		if json.Unmarshal([]byte(args), &m) == nil && len(m.Sources) > 0 {
			out[sourcesKey(m.Sources)] = id
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: consolidate %q: read pending merges: %w", agent, err)
	}
	return out, nil
}

// sourcesKey is a merge's set of source ids as a map key.
func sourcesKey(ids []int64) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return fmt.Sprint(ids)
}

// liveEntries reads agent's live entries with ids up to end, signed.
func (c *Store) liveEntries(ctx context.Context, agent string, end int64) ([]*sigEntry, error) {
	rows, err := c.rdb.QueryContext(ctx, `SELECT `+archivalCols+`, COALESCE(content_key, ''), metadata_json FROM archival
		WHERE agent = ? AND valid_to IS NULL AND id <= ? ORDER BY id`, agent, end)
	if err != nil {
		return nil, fmt.Errorf("memory: consolidate %q: read entries: %w", agent, err)
	}
	defer rows.Close()
	var out []*sigEntry
	for rows.Next() {
		s := &sigEntry{}
		var meta string
		e, err := scanArchival(scanExtra{rows, []any{&s.key, &meta}})
		if err != nil {
			return nil, fmt.Errorf("memory: consolidate %q: read entries: %w", agent, err)
		}
		// Numbers exact (json.Number): thread ids past 2^53 stay apart.
		if e.Metadata, err = decodeMetadata(meta); err != nil {
			return nil, fmt.Errorf("memory: consolidate %q: archival %d metadata: %w", agent, e.ID, err)
		}
		s.e = e
		s.conv = conversationOf(e.Metadata)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: consolidate %q: read entries: %w", agent, err)
	}
	for _, s := range out {
		s.sign()
	}
	return out, nil
}

// findClusters groups entries (id order) into clusters of two or more,
// each around its oldest entry: an entry joins the cluster of the most
// similar older entry of its conversation that leads a cluster or is
// alone, when their Jaccard similarity is at least threshold (no chains:
// every member is similar to the first). Only clusters holding an entry
// past after are returned.
func findClusters(entries []*sigEntry, after int64, threshold float64) [][]*sigEntry {
	type bucket struct {
		conv string
		band int
		h    uint64
	}
	index := map[bucket][]int{}
	leader := make([]int, len(entries)) // index of the cluster's first entry
	members := map[int][]int{}
	for i, s := range entries {
		leader[i] = i
		best, bestSim := -1, 0.0
		seen := map[int]bool{}
		for b := range minhashBands {
			h := fnv.New64a()
			for _, v := range s.sig[b*minhashRows : (b+1)*minhashRows] {
				var buf [8]byte
				for k := range buf {
					buf[k] = byte(v >> (8 * k))
				}
				h.Write(buf[:])
			}
			key := bucket{s.conv, b, h.Sum64()}
			// A bucket is compared by its latest maxBucket entries only: texts
			// sharing most of their words (templates, logs) would otherwise
			// make every pair a candidate.
			cands := index[key]
			if len(cands) > maxBucket {
				cands = cands[len(cands)-maxBucket:]
				index[key] = slices.Clone(cands)
			}
			for _, j := range cands {
				if seen[j] || leader[j] != j {
					continue
				}
				seen[j] = true
				if sim := similarity(entries[j], s); sim >= threshold && sim > bestSim {
					best, bestSim = j, sim
				}
			}
			index[key] = append(index[key], i)
		}
		if best >= 0 {
			leader[i] = best
			if members[best] == nil {
				members[best] = []int{best}
			}
			members[best] = append(members[best], i)
		}
	}
	var out [][]*sigEntry
	lead := make([]int, 0, len(members))
	for l := range members {
		lead = append(lead, l)
	}
	slices.Sort(lead)
	for _, l := range lead {
		m := members[l]
		if entries[m[len(m)-1]].e.ID <= after {
			continue // examined by an earlier round
		}
		cl := make([]*sigEntry, len(m))
		for k, i := range m {
			cl[k] = entries[i]
		}
		out = append(out, cl)
	}
	return out
}

// similarity is a's and b's: 1 for equal normalised texts, else the
// Jaccard similarity of their term sets (texts of fewer than three terms
// are similar only when their terms are equal).
func similarity(a, b *sigEntry) float64 {
	if a.key != "" && a.key == b.key {
		return 1
	}
	j := jaccard(a.terms, b.terms)
	if (len(a.terms) < 3 || len(b.terms) < 3) && j < 1 {
		return 0
	}
	return j
}

// classify makes cl's merge: exact when every text normalises alike,
// near-exact when every term set is the first's, else near. The merged
// text is the oldest entry's, its metadata the oldest's keys first then
// the others' it lacks, its tags all of theirs.
func classify(cl []*sigEntry, threshold float64) ConsolidationCluster {
	kind, minSim := MergeExact, 1.0
	first := NormalizeContent(cl[0].e.Content)
	for _, s := range cl[1:] {
		sim := jaccard(cl[0].terms, s.terms)
		minSim = min(minSim, sim)
		if kind == MergeExact && NormalizeContent(s.e.Content) != first {
			kind = MergeNearExact
		}
		if sim < 1 {
			kind = MergeNear
		}
	}
	_ = threshold
	return clusterOf(cl, kind, minSim)
}

func clusterOf(cl []*sigEntry, kind string, sim float64) ConsolidationCluster {
	m := ArchivalMerge{Kind: kind, Similarity: sim, Content: cl[0].e.Content, Metadata: map[string]any{}}
	var texts []string
	var tags []string
	for _, s := range cl {
		m.Sources = append(m.Sources, s.e.ID)
		texts = append(texts, s.e.Content)
		tags = append(tags, s.e.Tags...)
		m.Metadata, _ = mergeMetadata(m.Metadata, s.e.Metadata)
	}
	m.Tags = normTags(tags)
	return ConsolidationCluster{Merge: m, Texts: texts}
}

// askModel asks model about cl and, on a valid answer, makes cl's merge
// the model's; a failure or invalid answer is recorded in rep and leaves
// cl as it was.
func (c *Store) askModel(ctx context.Context, model ConsolidationModel, agent string, cl *ConsolidationCluster, rep *ConsolidateReport) {
	entries := make([]ArchivalEntry, len(cl.Texts))
	tokens := 0
	for i, t := range cl.Texts {
		entries[i] = ArchivalEntry{ID: cl.Merge.Sources[i], Agent: agent, Content: t}
		tokens += len(t)/4 + 8
	}
	rep.ModelTokens += tokens
	ans, err := model.MergeEntries(ctx, entries)
	if err == nil {
		err = c.checkModelMerge(agent, cl, &ans)
	}
	if err != nil {
		rep.ModelErrors = append(rep.ModelErrors, fmt.Sprintf("cluster %v: %v", cl.Merge.Sources, err))
		return
	}
	switch ans.Action {
	case "keep":
		cl.Reason = "model: keep: " + ans.Reason
		cl.Merge.Model = model.Name()
		return
	case "supersede":
		i := slices.Index(cl.Merge.Sources, ans.Keep)
		cl.Merge.Content = cl.Texts[i]
		cl.Merge.Kind = MergeCorrection
	default:
		cl.Merge.Content = ans.Content
	}
	cl.Merge.Model = model.Name()
	cl.Reason = ans.Reason
}

// checkModelMerge refuses an answer that is not one of the actions, that
// keeps an entry outside the cluster, or whose text is empty or past the
// entry cap.
func (c *Store) checkModelMerge(agent string, cl *ConsolidationCluster, a *ModelMerge) error {
	switch a.Action {
	case "keep":
		return nil
	case "supersede":
		if !slices.Contains(cl.Merge.Sources, a.Keep) {
			return fmt.Errorf("%w: supersede keeps entry %d, not one of the cluster %v", ErrModel, a.Keep, cl.Merge.Sources)
		}
		return nil
	case "merge":
		if strings.TrimSpace(a.Content) == "" {
			return fmt.Errorf("%w: merge with an empty text", ErrModel)
		}
		if err := c.checkArchivalText(agent, a.Content, nil); err != nil {
			return fmt.Errorf("%w: %w", ErrModel, err)
		}
		if err := checkStorable(agent, "archival entry", "content", a.Content); err != nil {
			return fmt.Errorf("%w: %w", ErrModel, err)
		}
		return nil
	}
	return fmt.Errorf("%w: unknown action %q (want merge, supersede or keep)", ErrModel, a.Action)
}

// proposeRewrites offers the model agent's blocks filled past
// o.BlockFill of their limit and proposes its shorter texts.
func (c *Store) proposeRewrites(ctx context.Context, agent string, o ConsolidateOptions, rep *ConsolidateReport) error {
	metas, err := c.blocksOf(ctx, agent)
	if err != nil {
		return err
	}
	for _, m := range metas {
		if m.CharLimit <= 0 || rep.ModelTokens >= o.MaxModelTokens {
			continue
		}
		text, err := c.renderedContent(ctx, agent, m.Label)
		if err != nil {
			return err
		}
		n := len([]rune(text))
		if float64(n) < o.BlockFill*float64(m.CharLimit) {
			continue
		}
		rep.ModelTokens += len(text)/4 + 8
		text2, reason, err := o.Model.RewriteBlock(ctx, m.Label, text, m.CharLimit)
		if err == nil && (strings.TrimSpace(text2) == "" || len([]rune(text2)) >= n) {
			err = fmt.Errorf("%w: the rewrite of block %q is empty or no shorter (%d characters, the block holds %d)", ErrModel, m.Label, len([]rune(text2)), n)
		}
		if err != nil {
			rep.ModelErrors = append(rep.ModelErrors, fmt.Sprintf("block %q: %v", m.Label, err))
			continue
		}
		p, err := c.proposeEdit(ctx, agent, agent, m.Label, Edit{Op: "set_text", Text: text2}, "consolidation ("+o.Model.Name()+"): "+reason)
		if err != nil {
			rep.ModelErrors = append(rep.ModelErrors, fmt.Sprintf("block %q: %v", m.Label, err))
			continue
		}
		rep.Proposals = append(rep.Proposals, p.ID)
	}
	return nil
}

// MaxMergeSources is the most archival entries one merge may name:
// MaxClusterSize is capped to it, and a merge (a dump's proposal, an
// approval) naming more is refused.
const MaxMergeSources = 256

// checkMergeSources refuses a merge's source list of fewer than two ids,
// more than MaxMergeSources, or an id twice.
func checkMergeSources(src []int64) error {
	if len(src) < 2 {
		return invalidArg("a merge of %d archival entries (want two or more)", len(src))
	}
	if len(src) > MaxMergeSources {
		return invalidArg("a merge of %d archival entries (at most %d)", len(src), MaxMergeSources)
	}
	seen := make(map[int64]bool, len(src))
	for _, id := range src {
		if seen[id] {
			return invalidArg("a merge names archival entry %d twice", id)
		}
		seen[id] = true
	}
	return nil
}

// OpMergeArchival is the op of a proposal that merges archival entries
// (Proposal.Merge).
const OpMergeArchival = "merge_archival"

// proposeMerge records m as a pending proposal on agent's archival
// memory.
func (c *Store) proposeMerge(ctx context.Context, agent string, m ArchivalMerge, reason string) (int64, error) {
	args, err := json.Marshal(m)
	if err != nil {
		return 0, invalidArg("merge proposal is not serialisable: %v", err)
	}
	if err := c.checkProposal(ctx, agent, len(args)+len(reason)); err != nil {
		return 0, err
	}
	id, err := c.insertID(ctx, nil, `INSERT INTO proposals (block_id, proposer, op, args_json, reason, created_at) VALUES (NULL, ?, ?, ?, ?, ?) RETURNING id`,
		agent, OpMergeArchival, string(args), reason, c.nanos())
	if err != nil {
		return 0, fmt.Errorf("memory: propose a merge of archival entries %v of %q: %w", m.Sources, agent, err)
	}
	return id, nil
}

// applyMerge applies m to agent's archival memory in one transaction
// (deciding proposal id as approved by approver, when id is not 0): every
// source must still be live; the merged entry is inserted (Metadata's
// "derived_from" the sources) and supersedes each source. It returns the
// merged entry's id.
func (c *Store) applyMerge(ctx context.Context, agent string, m ArchivalMerge, id int64, approver string) (int64, error) {
	if err := checkMergeSources(m.Sources); err != nil {
		return 0, fmt.Errorf("archival memory of %q: %w", agent, err)
	}
	meta := map[string]any{}
	for k, v := range m.Metadata {
		meta[k] = v
	}
	meta["derived_from"] = m.Sources
	row, err := c.prepareArchival(agent, ArchivalEntry{Content: m.Content, Tags: m.Tags, Metadata: meta}, c.opts.Now().UTC(), true)
	if err != nil {
		return 0, err
	}
	vecs, err := c.embedArchival(ctx, agent, []*archivalRow{row})
	if err != nil {
		return 0, err
	}
	err = c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		if id != 0 {
			if err := c.decideTx(tx, id, "approved", approver, ""); err != nil {
				return err
			}
		}
		if err := c.checkQuota(ctx, tx, agent, row.bytes()); err != nil {
			return err
		}
		at := row.e.ValidFrom.UnixNano()
		for _, src := range m.Sources {
			res, err := tx.ExecContext(ctx, `UPDATE archival SET valid_to = ? WHERE id = ? AND agent = ? AND valid_to IS NULL`, at, src, agent)
			if err != nil {
				return fmt.Errorf("memory: merge: supersede archival %d of %q: %w", src, agent, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("%w: merge of %v: archival entry %d of agent %q is no longer live (superseded or deleted since)", ErrNotFound, m.Sources, src, agent)
			}
		}
		if err := c.insertArchivalRows(ctx, tx, []*archivalRow{row}, vecs); err != nil {
			return err
		}
		for _, src := range m.Sources {
			if _, err := tx.ExecContext(ctx, `UPDATE archival SET superseded_by = ? WHERE id = ?`, row.e.ID, src); err != nil {
				return fmt.Errorf("memory: link supersession %d -> %d: %w", src, row.e.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return row.e.ID, nil
}

// Consolidate runs one consolidation round over the agent's archival
// memory (see [ConsolidateOptions] and [ConsolidateReport]).
func (r *Archival) Consolidate(ctx context.Context, opts *ConsolidateOptions) (*ConsolidateReport, error) {
	if err := r.a.check(ctx); err != nil {
		return nil, err
	}
	return r.a.s.consolidate(ctx, r.a.id, opts)
}
