package memory

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
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
	// round's), after any live entry no round has examined yet, which
	// comes first. Each examined entry is compared with the live entries
	// of its conversation it shares a MinHash band with, older ones
	// included (the store keeps the examined entries' band keys), not
	// with every entry: a round reads its window and those candidates.
	After int64
	// MaxEntries bounds the entries a round examines (default 10,000);
	// the window also ends once the contents and metadata it read reach
	// 16 MiB (ConsolidateReport.Next then goes on from there).
	MaxEntries int
	// Threshold is the Jaccard similarity of two entries' term sets from
	// which they are near-duplicates (default 0.8, at most 1).
	Threshold float64
	// MaxClusterSize bounds a cluster (default 32, at most
	// MaxMergeSources): a larger one is reported, not proposed
	// (ConsolidateReport.Skipped).
	MaxClusterSize int
	// Resume starts the round past the highest id a round examined
	// before (recorded in the store, so a restarted process resumes too);
	// After is then ignored.
	Resume bool
	// DryRun reports the clusters and proposes and applies nothing (it
	// records the examined entries' signatures, which are derived data).
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
	Examined int   // entries examined (the window)
	Live     int   // live entries read: the window, its candidates and their clusters' older members
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
	bytes int // content and metadata read
}

const (
	// maxRoundBytes bounds the contents and metadata a round's window
	// reads (the window ends early; ConsolidateReport.Next goes on).
	maxRoundBytes = 16 << 20
	// maxSignedBytes: an entry whose content is longer is compared by its
	// content key only (exact duplicates), not by its terms: signing a
	// long text costs several times its size in memory and CPU.
	maxSignedBytes = 64 << 10
	// maxCandidateBytes bounds the contents and metadata of the older
	// entries a round reads as candidates (those sharing the most of the
	// window's buckets first); the rest are not compared in that round.
	// The members of the older clusters window entries joined have a
	// budget of the same size (round.run), each cluster read whole.
	maxCandidateBytes = 16 << 20
	maxBucket         = 64
	minhashK          = 64
	minhashBands      = 16
	minhashRows       = minhashK / minhashBands
)

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// sign fills s's terms and MinHash signature.
func (s *sigEntry) sign() {
	if s.long() {
		// Compared by its key alone (the store keeps none with
		// KeepDuplicates).
		s.key = dedupKey(s.e.Content, s.conv)
		return
	}
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

// long says whether s is compared by its content key only (see
// maxSignedBytes).
func (s *sigEntry) long() bool { return len(s.e.Content) > maxSignedBytes }

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

// consolidate implements [Archival.Consolidate].
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
	// The round's window: MaxEntries live entries past After (past the
	// highest examined id with Resume), preceded by any live entry no
	// round has examined yet.
	from := o.After
	if o.Resume {
		// The index's last entry, asked for as such: PostgreSQL plans
		// MAX by its guess of the agent's rows, and read them all for an
		// agent it took for one.
		if err := c.rdb.QueryRowContext(ctx, `SELECT COALESCE((SELECT archival_id FROM archival_minhash WHERE agent = ? ORDER BY archival_id DESC LIMIT 1), 0)`, agent).Scan(&from); err != nil {
			return rep, fmt.Errorf("memory: consolidate %q: read the last examined entry: %w", agent, err)
		}
	}
	if from > 0 {
		// Never examined, and with Resume also examined but left
		// unsettled (a cluster not proposed: a dry run, the proposal cap,
		// a stop). Only Resume takes those back: a round paged by After
		// would otherwise start at the same unsettled entry again.
		unsettled := ""
		if o.Resume {
			unsettled = " AND m.settled"
		}
		var first sql.NullInt64
		if err := c.rdb.QueryRowContext(ctx, `SELECT MIN(a.id) FROM archival a WHERE a.agent = ? AND a.valid_to IS NULL AND a.id <= ?
			AND NOT EXISTS (SELECT 1 FROM archival_minhash m WHERE m.archival_id = a.id`+unsettled+`)`, agent, from).Scan(&first); err != nil {
			return rep, fmt.Errorf("memory: consolidate %q: find unexamined entries: %w", agent, err)
		}
		if first.Valid {
			from = first.Int64 - 1
		}
	}
	window, cut, err := c.readSigEntries(ctx, agent, maxRoundBytes, `agent = ? AND valid_to IS NULL AND id > ? ORDER BY id LIMIT ?`, agent, from, o.MaxEntries)
	if err != nil {
		return rep, err
	}
	rep.Examined = len(window)
	if rep.Examined > 0 {
		rep.Last = window[len(window)-1].e.ID
	}
	if rep.Examined == o.MaxEntries || cut {
		rep.Next = rep.Last
	}
	if err := signAll(ctx, window); err != nil {
		return rep, fmt.Errorf("memory: consolidate %q: %w", agent, err)
	}
	r := &round{c: c, agent: agent, from: from, maxCluster: o.MaxClusterSize, threshold: o.Threshold,
		candidateBytes: cmp.Or(c.consolidateCandidateBytes, maxCandidateBytes)}
	clusters, err := r.run(ctx, window)
	if err != nil {
		return rep, err
	}
	rep.Live = r.read
	for _, cl := range clusters {
		if len(cl) > o.MaxClusterSize {
			rep.Skipped = append(rep.Skipped, clusterOf(cl, MergeNear, 0))
			continue
		}
		rep.Clusters = append(rep.Clusters, classify(cl, o.Threshold))
	}
	defer func() { rep.Elapsed = time.Since(start) }()
	// open[i]: cluster i is not settled by this round (not proposed,
	// applied, already pending or rejected, or refused for good: a dry
	// run, the pending-proposal quota, a stop): its window entries are not
	// recorded as examined, so the next round, resumed or not, examines
	// them again.
	open := make([]bool, len(rep.Clusters))
	for i := range open {
		open[i] = true
	}
	finish := func(err error) (*ConsolidateReport, error) {
		skip := maps.Clone(r.deferred)
		for i, cl := range rep.Clusters {
			if open[i] {
				for _, id := range cl.Merge.Sources {
					skip[id] = true
				}
			}
		}
		if serr := r.save(ctx, window, skip); serr != nil && err == nil {
			err = serr
		}
		return rep, err
	}
	if o.DryRun {
		return finish(nil)
	}
	decided, err := c.priorMerges(ctx, agent, 0)
	if err != nil {
		return finish(err)
	}
	for i := range rep.Clusters {
		if err := ctx.Err(); err != nil {
			return finish(fmt.Errorf("memory: consolidate %q: stopped after %d of %d clusters: %w", agent, i, len(rep.Clusters), err))
		}
		cl := &rep.Clusters[i]
		open[i] = false
		kind := cl.Merge.Kind
		prior := decided.merges[sourcesKey(cl.Merge.Sources)]
		if prior.status == "rejected" {
			// Someone decided against this merge: neither proposed nor
			// applied again (a cluster that gains a member is a new merge).
			cl.Reason = fmt.Sprintf("a merge of these entries was rejected (proposal %d)", prior.id)
			continue
		}
		if o.ApplyExact && kind == MergeExact {
			// A pending proposal of the same merge is decided by it.
			id, err := c.applyMerge(ctx, agent, cl.Merge, prior.id, "system:consolidate")
			if err != nil {
				cl.Reason = err.Error()
				open[i] = errors.Is(err, ErrQuota) || ctx.Err() != nil
				continue
			}
			cl.MergedID = id
			rep.Applied++
			continue
		}
		if prior.id != 0 {
			// Already awaiting a decision: not proposed again.
			cl.Reason = fmt.Sprintf("a merge of these entries is pending (proposal %d)", prior.id)
			continue
		}
		if kind == MergeNear && o.Model != nil && rep.ModelTokens < o.MaxModelTokens {
			c.askModel(ctx, o.Model, agent, cl, rep)
		}
		id, err := c.proposeMerge(ctx, agent, cl.Merge, cl.Reason, decided.last)
		var dup *priorMerge
		if errors.As(err, &dup) {
			// Another round (a goroutine, a process) proposed or decided
			// it since this one read the proposals.
			cl.Reason = dup.Error()
			continue
		}
		if err != nil {
			if errors.Is(err, ErrQuota) || errors.Is(err, ErrTooLarge) {
				cl.Reason = err.Error()
				// Over the quota: again once proposals are decided. Too
				// large: it would be again.
				open[i] = errors.Is(err, ErrQuota)
				continue
			}
			open[i] = true
			return finish(err)
		}
		cl.ProposalID = id
		rep.Proposals = append(rep.Proposals, id)
	}
	if _, err := finish(nil); err != nil {
		return rep, err
	}
	if o.Model != nil && o.BlockFill > 0 && o.After == 0 {
		if err := c.proposeRewrites(ctx, agent, o, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// priorMerge is a merge_archival proposal of the same sources as one a
// round would make: pending (not proposed again) or rejected (neither
// proposed nor applied again).
type priorMerge struct {
	id     int64
	status string
}

func (p *priorMerge) Error() string {
	if p.status == "rejected" {
		return fmt.Sprintf("a merge of these entries was rejected (proposal %d)", p.id)
	}
	return fmt.Sprintf("a merge of these entries is pending (proposal %d)", p.id)
}

// priorMerges are agent's pending and rejected merge_archival proposals
// with ids above since, by their sources (sourcesKey), and the highest
// proposal id read.
type priorMerges struct {
	merges map[string]priorMerge
	last   int64
}

// priorMerges reads agent's pending and rejected merge_archival proposals
// with ids above since.
func (c *Store) priorMerges(ctx context.Context, agent string, since int64) (priorMerges, error) {
	return readPriorMerges(ctx, c.rdb, agent, since)
}

// queryer is the store's reader or a write transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readPriorMerges is priorMerges through q.
func readPriorMerges(ctx context.Context, q queryer, agent string, since int64) (priorMerges, error) {
	out := priorMerges{merges: map[string]priorMerge{}, last: since}
	rows, err := q.QueryContext(ctx, `SELECT id, status, args_json FROM proposals
		WHERE proposer = ? AND op = ? AND block_id IS NULL AND status IN ('pending', 'rejected') AND id > ? ORDER BY id`, agent, OpMergeArchival, since)
	if err != nil {
		return out, fmt.Errorf("memory: consolidate %q: read pending and rejected merges: %w", agent, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p priorMerge
		var args string
		if err := rows.Scan(&p.id, &p.status, &args); err != nil {
			return out, fmt.Errorf("memory: consolidate %q: read pending and rejected merges: %w", agent, err)
		}
		out.last = max(out.last, p.id)
		var m ArchivalMerge
		if json.Unmarshal([]byte(args), &m) == nil && len(m.Sources) > 0 {
			k := sourcesKey(m.Sources)
			// A pending proposal wins over a rejected one: it is decided
			// by ApplyExact.
			if cur, ok := out.merges[k]; !ok || cur.status == "rejected" {
				out.merges[k] = p
			}
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("memory: consolidate %q: read pending and rejected merges: %w", agent, err)
	}
	return out, nil
}

// sourcesKey is a merge's set of source ids as a map key.
func sourcesKey(ids []int64) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return fmt.Sprint(ids)
}

// readSigEntries reads agent's entries matching where (a condition on
// archival's columns, with args), unsigned. With budget > 0 it stops
// after the entry that brings the contents and metadata read to budget
// bytes (so at least one entry), and says whether it did.
func (c *Store) readSigEntries(ctx context.Context, agent string, budget int, where string, args ...any) ([]*sigEntry, bool, error) {
	rows, err := c.rdb.QueryContext(ctx, `SELECT `+archivalCols+`, COALESCE(content_key, ''), metadata_json FROM archival WHERE `+where, args...)
	if err != nil {
		return nil, false, fmt.Errorf("memory: consolidate %q: read entries: %w", agent, err)
	}
	defer rows.Close()
	var out []*sigEntry
	size := 0
	for (budget <= 0 || size < budget) && rows.Next() {
		s := &sigEntry{}
		var meta string
		e, err := scanArchival(scanExtra{rows, []any{&s.key, &meta}})
		if err != nil {
			return nil, false, fmt.Errorf("memory: consolidate %q: read entries: %w", agent, err)
		}
		// Numbers exact (json.Number): thread ids past 2^53 stay apart.
		if e.Metadata, err = decodeMetadata(meta); err != nil {
			return nil, false, fmt.Errorf("memory: consolidate %q: archival %d metadata: %w", agent, e.ID, err)
		}
		s.e = e
		s.conv = conversationOf(e.Metadata)
		s.bytes = len(e.Content) + len(meta)
		size += s.bytes
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("memory: consolidate %q: read entries: %w", agent, err)
	}
	return out, budget > 0 && size >= budget, nil
}

// signAll signs entries, checking ctx every 256.
func signAll(ctx context.Context, entries []*sigEntry) error {
	for i, s := range entries {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("signing entries: %w", err)
			}
		}
		s.sign()
	}
	return nil
}

// bandKeys are s's locality-sensitive hashing buckets: for each band, a
// 64-bit digest of s's conversation, the band's number and its MinHash
// values (as the database's signed integers).
func (s *sigEntry) bandKeys() [minhashBands]int64 {
	var out [minhashBands]int64
	var buf []byte
	if s.long() {
		// A band's key digests the band's number and the content key
		// (which digests the conversation): only exact duplicates share
		// one.
		for b := range out {
			h := fnv.New64a()
			h.Write([]byte{0xff, byte(b)})
			h.Write([]byte(s.key))
			out[b] = int64(h.Sum64())
		}
		return out
	}
	for b := range minhashBands {
		buf = append(buf[:0], s.conv...)
		buf = append(buf, 0, byte(b))
		for _, v := range s.sig[b*minhashRows : (b+1)*minhashRows] {
			buf = binary.LittleEndian.AppendUint64(buf, v)
		}
		h := fnv.New64a()
		h.Write(buf)
		out[b] = int64(h.Sum64())
	}
	return out
}

// round is one consolidation round's clustering: the window (the entries
// it examines, id order, all past from) against the entries examined
// before (archival_minhash, archival_bands).
type round struct {
	c          *Store
	agent      string
	from       int64
	maxCluster int
	threshold  float64
	read       int // entries read besides the window: candidates, older members
	leaders    map[int64]int64
	// deferred are the window entries that joined an older cluster whose
	// members the round's budget left unread: alone in this round, and
	// recorded unexamined.
	deferred map[int64]bool
	// candidateBytes is maxCandidateBytes, unless a test sets it lower.
	candidateBytes int
}

// run clusters window (signed, id order): each entry joins the most
// similar older entry of its conversation that leads a cluster or is
// alone, when their Jaccard similarity is at least threshold (no chains:
// every member is similar to the first). The older entries it may join
// are those sharing a band with it (each band compared by its latest
// maxBucket live entries): from the window itself, or read from the
// band index with their clusters' state. It returns the clusters holding
// a window entry, each in id order, the older members a cluster had
// before the round first (at most maxCluster+1 members read from the
// database: a larger cluster is skipped anyway).
func (r *round) run(ctx context.Context, window []*sigEntry) ([][]*sigEntry, error) {
	r.read = len(window)
	keys := make([][minhashBands]int64, len(window))
	distinct := map[int64]bool{}
	for i, s := range window {
		keys[i] = s.bandKeys()
		for _, k := range keys[i] {
			distinct[k] = true
		}
	}
	index := map[int64][]*sigEntry{}
	older := map[int64]*sigEntry{}
	// leaderOf: an entry's cluster's first entry (itself when alone; nil
	// for an older entry that joined a cluster).
	leaderOf := map[*sigEntry]*sigEntry{}
	members := map[*sigEntry][]*sigEntry{}
	if r.from > 0 && len(distinct) > 0 {
		// Each bucket's latest maxBucket live older entries, marked
		// whether each leads its cluster (or is alone): only those are
		// compared, so only those are read.
		type cand struct {
			id   int64
			lead bool
		}
		buckets := map[int64][]cand{}
		shared := map[int64]int{} // a leading candidate's buckets
		keyList := make([]int64, 0, len(distinct))
		for k := range distinct {
			keyList = append(keyList, k)
		}
		slices.Sort(keyList)
		// A query reads batch buckets (one sub-select with its own LIMIT
		// each): one per query in process (SQLite), 32 per round trip to
		// a server.
		batch := 1
		if r.c.be.Name() != "sqlite" {
			batch = 32
		}
		bandQuery := func(n int) string {
			parts := make([]string, n)
			for i := range parts {
				parts[i] = fmt.Sprintf(`SELECT * FROM (SELECT b.band_key, b.archival_id, CASE WHEN m.leader_id = m.archival_id OR NOT EXISTS
					(SELECT 1 FROM archival l WHERE l.id = m.leader_id AND l.valid_to IS NULL) THEN 1 ELSE 0 END AS lead
					FROM archival_bands b JOIN archival a ON a.id = b.archival_id JOIN archival_minhash m ON m.archival_id = b.archival_id
					WHERE b.agent = ? AND b.band_key = ? AND b.archival_id <= ? AND a.valid_to IS NULL
					ORDER BY b.archival_id DESC LIMIT %d) q%d`, maxBucket, i)
			}
			return strings.Join(parts, " UNION ALL ")
		}
		stmt, err := r.c.rdb.PrepareContext(ctx, bandQuery(batch))
		if err != nil {
			return nil, fmt.Errorf("memory: consolidate %q: read the band index: %w", r.agent, err)
		}
		defer stmt.Close()
		for i, chunk := 0, []int64(nil); i < len(keyList); i += len(chunk) {
			chunk = keyList[i:min(i+batch, len(keyList))]
			if i%256 < len(chunk) {
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("memory: consolidate %q: read the band index: %w", r.agent, err)
				}
			}
			args := make([]any, 0, 3*len(chunk))
			for _, k := range chunk {
				args = append(args, r.agent, k, r.from)
			}
			var rows *sql.Rows
			if len(chunk) == batch {
				rows, err = stmt.QueryContext(ctx, args...)
			} else {
				rows, err = r.c.rdb.QueryContext(ctx, bandQuery(len(chunk)), args...)
			}
			if err != nil {
				return nil, fmt.Errorf("memory: consolidate %q: read the band index: %w", r.agent, err)
			}
			for rows.Next() {
				var k int64
				var c cand
				var lead int
				if err := rows.Scan(&k, &c.id, &lead); err != nil {
					rows.Close()
					return nil, fmt.Errorf("memory: consolidate %q: read the band index: %w", r.agent, err)
				}
				c.lead = lead == 1
				buckets[k] = append(buckets[k], c)
				if c.lead {
					older[c.id] = nil
					shared[c.id]++
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("memory: consolidate %q: read the band index: %w", r.agent, err)
			}
		}
		for _, cs := range buckets {
			slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(a.id, b.id) })
		}
		if err := r.readOlder(ctx, older, shared); err != nil {
			return nil, err
		}
		// A member holds its place in its buckets (the latest maxBucket)
		// but is never compared: a stub.
		stubs := map[int64]*sigEntry{}
		for k, cs := range buckets {
			for _, c := range cs {
				s := older[c.id]
				if !c.lead || s == nil {
					if s = stubs[c.id]; s == nil {
						s = &sigEntry{e: ArchivalEntry{ID: c.id}}
						stubs[c.id] = s
					}
				}
				index[k] = append(index[k], s)
			}
		}
		for _, s := range stubs {
			leaderOf[s] = nil
		}
	}
	for _, s := range older {
		if s != nil {
			leaderOf[s] = s
		}
	}
	leader := leaderOf
	for i, s := range window {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("memory: consolidate %q: clustering: %w", r.agent, err)
			}
		}
		leader[s] = s
		var best *sigEntry
		bestSim := 0.0
		seen := map[*sigEntry]bool{}
		for _, key := range keys[i] {
			// A bucket is compared by its latest maxBucket entries only: texts
			// sharing most of their words (templates, logs) would otherwise
			// make every pair a candidate.
			cands := index[key]
			if len(cands) > maxBucket {
				cands = cands[len(cands)-maxBucket:]
				index[key] = slices.Clone(cands)
			}
			for _, j := range cands {
				if seen[j] || leader[j] != j || j.conv != s.conv {
					continue
				}
				seen[j] = true
				if sim := similarity(j, s); sim >= r.threshold && sim > bestSim {
					best, bestSim = j, sim
				}
			}
			index[key] = append(index[key], s)
		}
		if best != nil {
			leader[s] = best
			members[best] = append(members[best], s)
		}
	}
	r.leaders, r.deferred = map[int64]int64{}, map[int64]bool{}
	for _, s := range window {
		r.leaders[s.e.ID] = leader[s].e.ID
	}
	lead := make([]*sigEntry, 0, len(members))
	for l := range members {
		lead = append(lead, l)
	}
	slices.SortFunc(lead, func(a, b *sigEntry) int { return cmp.Compare(a.e.ID, b.e.ID) })
	var out [][]*sigEntry
	budget := r.candidateBytes
	for _, l := range lead {
		cl := []*sigEntry{l}
		if l.e.ID <= r.from {
			if budget <= 0 {
				// Past the budget: the window entries that joined l
				// stand alone in this round, recorded unexamined
				// (r.deferred), so a resumed round takes them again.
				for _, s := range members[l] {
					r.leaders[s.e.ID] = s.e.ID
					r.deferred[s.e.ID] = true
				}
				continue
			}
			// The first maxCluster+1 (index order: a huge cluster costs
			// no more than that), whole: a cluster's members are read
			// while the round's budget lasts.
			prior, _, err := r.c.readSigEntries(ctx, r.agent, 0, `id IN (SELECT m.archival_id FROM archival_minhash m JOIN archival a ON a.id = m.archival_id
				WHERE m.leader_id = ? AND m.archival_id > ? AND m.archival_id <= ? AND a.agent = ? AND a.valid_to IS NULL
				ORDER BY m.leader_id, m.archival_id LIMIT ?) ORDER BY id`, l.e.ID, l.e.ID, r.from, r.agent, r.maxCluster+1)
			if err != nil {
				return nil, err
			}
			r.read += len(prior)
			for _, s := range prior {
				budget -= s.bytes
			}
			if err := signAll(ctx, prior); err != nil {
				return nil, fmt.Errorf("memory: consolidate %q: %w", r.agent, err)
			}
			cl = append(cl, prior...)
		}
		out = append(out, append(cl, members[l]...))
	}
	return out, nil
}

// readOlder reads and signs the older entries whose ids are older's keys,
// those sharing the most buckets with the window (shared) first, the
// newer first among equals, until their contents and metadata reach
// r.candidateBytes: a store crafted so that a round's buckets name
// ~1,000 entries of 128 KiB each costs a round that budget, not
// ~135 MB. An entry no longer live, or past the budget, stays nil (not
// compared in this round).
func (r *round) readOlder(ctx context.Context, older map[int64]*sigEntry, shared map[int64]int) error {
	ids := make([]int64, 0, len(older))
	for id := range older {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int64) int {
		if c := cmp.Compare(shared[b], shared[a]); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	budget := r.candidateBytes
	for chunk := range slices.Chunk(ids, 64) {
		if budget <= 0 {
			break
		}
		args := make([]any, 0, len(chunk)+1)
		args = append(args, r.agent)
		for _, id := range chunk {
			args = append(args, id)
		}
		in := "?" + strings.Repeat(", ?", len(chunk)-1)
		got, _, err := r.c.readSigEntries(ctx, r.agent, budget, `agent = ? AND valid_to IS NULL AND id IN (`+in+`)`, args...)
		if err != nil {
			return err
		}
		if err := signAll(ctx, got); err != nil {
			return fmt.Errorf("memory: consolidate %q: %w", r.agent, err)
		}
		r.read += len(got)
		for _, s := range got {
			older[s.e.ID] = s
			budget -= s.bytes
		}
	}
	return nil
}

// save records the window's entries as examined: their leaders (r.leaders)
// and band keys, replacing what an earlier round recorded for them. An
// entry in skip (its cluster not settled) is recorded unsettled, so that
// a resumed round examines it again. An entry deleted since it was read
// is passed over.
func (r *round) save(ctx context.Context, window []*sigEntry, skip map[int64]bool) error {
	if len(window) == 0 {
		return nil
	}
	return r.c.write(ctx, agentLock(r.agent), func(ctx context.Context, tx *sql.Tx) error {
		for chunk := range slices.Chunk(window, 50) {
			args := make([]any, 0, len(chunk))
			for _, s := range chunk {
				args = append(args, s.e.ID)
			}
			in := "?" + strings.Repeat(", ?", len(chunk)-1)
			ids, err := queryTxIDs(ctx, tx, `SELECT id FROM archival WHERE id IN (`+in+`)`, args...)
			if err != nil {
				return fmt.Errorf("memory: consolidate %q: record examined entries: %w", r.agent, err)
			}
			if len(ids) == 0 {
				continue
			}
			exists := map[int64]bool{}
			for _, id := range ids {
				exists[id] = true
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM archival_bands WHERE archival_id IN (`+in+`)`, args...); err != nil {
				return fmt.Errorf("memory: consolidate %q: record examined entries: %w", r.agent, err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM archival_minhash WHERE archival_id IN (`+in+`)`, args...); err != nil {
				return fmt.Errorf("memory: consolidate %q: record examined entries: %w", r.agent, err)
			}
			var lv, bv []string
			var la, ba []any
			for _, s := range chunk {
				if !exists[s.e.ID] {
					continue
				}
				lv = append(lv, "(?, ?, ?, ?)")
				la = append(la, s.e.ID, r.agent, r.leaders[s.e.ID], !skip[s.e.ID])
				for _, k := range s.bandKeys() {
					bv = append(bv, "(?, ?, ?)")
					ba = append(ba, r.agent, k, s.e.ID)
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO archival_minhash (archival_id, agent, leader_id, settled) VALUES `+strings.Join(lv, ", "), la...); err != nil {
				return fmt.Errorf("memory: consolidate %q: record examined entries: %w", r.agent, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO archival_bands (agent, band_key, archival_id) VALUES `+strings.Join(bv, ", ")+`
				ON CONFLICT DO NOTHING`, ba...); err != nil {
				return fmt.Errorf("memory: consolidate %q: record band keys: %w", r.agent, err)
			}
		}
		return nil
	})
}

// queryTxIDs runs query in tx and returns the ids it selects.
func queryTxIDs(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// similarity is a's and b's: 1 for equal normalised texts, else the
// Jaccard similarity of their term sets (texts of fewer than three terms
// are similar only when their terms are equal).
func similarity(a, b *sigEntry) float64 {
	if a.key != "" && a.key == b.key {
		return 1
	}
	if a.long() || b.long() {
		return 0
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
// memory, unless a merge proposal of the same sources with an id above
// since is pending or rejected (one made since the round read the
// proposals, by a concurrent round): then it returns that proposal as a
// *priorMerge error. The check and the insert are one transaction under
// the agent's write lock.
func (c *Store) proposeMerge(ctx context.Context, agent string, m ArchivalMerge, reason string, since int64) (int64, error) {
	args, err := json.Marshal(m)
	if err != nil {
		return 0, invalidArg("merge proposal is not serialisable: %v", err)
	}
	if err := c.checkProposal(ctx, agent, len(args)+len(reason)); err != nil {
		return 0, err
	}
	var id int64
	err = c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		newer, err := readPriorMerges(ctx, tx, agent, since)
		if err != nil {
			return err
		}
		if p, ok := newer.merges[sourcesKey(m.Sources)]; ok {
			return &p
		}
		return tx.QueryRowContext(ctx, `INSERT INTO proposals (block_id, proposer, op, args_json, reason, created_at) VALUES (NULL, ?, ?, ?, ?, ?) RETURNING id`,
			agent, OpMergeArchival, string(args), reason, c.nanos()).Scan(&id)
	})
	var dup *priorMerge
	if errors.As(err, &dup) {
		return 0, err
	}
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
	c.holdArchival(ctx, agent)
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
		place, placed, err := c.mergePlace(ctx, tx, agent, m.Sources, row.meta)
		if err != nil {
			return err
		}
		at := row.e.ValidFrom.UnixNano()
		for _, src := range m.Sources {
			res, err := c.txExec(ctx, tx, archivalSupersedeSQL, at, src, agent)
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
		if placed {
			// An entry the merged one was folded into (a live entry with
			// its content) keeps an earlier place of its own.
			if _, err := c.txExec(ctx, tx, archivalPlaceSQL, place, row.e.ID, place); err != nil {
				return fmt.Errorf("memory: merge: place archival %d of %q in its conversation: %w", row.e.ID, agent, err)
			}
		}
		for _, src := range m.Sources {
			if _, err := c.txExec(ctx, tx, archivalLinkSQL, row.e.ID, src); err != nil {
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

// archivalPlaceSQL places entry ? (the second argument) at place ? (the
// first and third) in its conversation, unless it stands earlier. Kept
// parsed by the backend, as archivalSupersedeSQL.
const archivalPlaceSQL = `UPDATE archival SET conversation_pos = ? WHERE id = ? AND COALESCE(conversation_pos, id) > ?`

// mergePlace is the place in its conversation (archival.conversation_pos;
// NULL is the entry's id) of an entry with metadata meta merging sources:
// the first place among the sources naming the same conversation, so that
// the merged entry's neighbours are theirs. ok is false when it names
// none or no source names its conversation: it goes where its id puts it.
func (c *Store) mergePlace(ctx context.Context, tx *sql.Tx, agent string, sources []int64, meta string) (place int64, ok bool, err error) {
	m, err := decodeMetadata(meta)
	if err != nil {
		return 0, false, fmt.Errorf("memory: merge: metadata of the merged entry of %q: %w", agent, err)
	}
	conv := conversationOf(m)
	if conv == "" {
		return 0, false, nil
	}
	for _, src := range sources {
		var stored any
		var smeta string
		err := tx.QueryRowContext(ctx, `SELECT conversation_pos, metadata_json FROM archival WHERE id = ? AND agent = ?`,
			src, agent).Scan(&stored, &smeta)
		if errors.Is(err, sql.ErrNoRows) {
			continue // the supersession below reports it
		}
		if err != nil {
			return 0, false, fmt.Errorf("memory: merge: read archival %d of %q: %w", src, agent, err)
		}
		sm, err := decodeMetadata(smeta)
		if err != nil || conversationOf(sm) != conv {
			continue
		}
		// The merged entry is newer than every source: a real place
		// stands at its floor for it.
		pos := placeValue(stored, src, math.MaxInt64)
		if !ok || pos < place {
			place, ok = pos, true
		}
	}
	return place, ok, nil
}

// Consolidate runs one consolidation round over the agent's archival
// memory: it finds near-duplicate entries and turns each cluster into a
// merge proposal ([Agent.Proposals]; approving one supersedes the sources
// with the merged entry), or with opts.ApplyExact applies the merges of
// exact duplicates at once. nil opts means the defaults of
// [ConsolidateOptions]; docs/consolidation.md describes the method. A
// cancelled ctx stops the round between clusters: what was proposed or
// applied stays, and the [ConsolidateReport], returned with the error,
// says what.
func (r *Archival) Consolidate(ctx context.Context, opts *ConsolidateOptions) (*ConsolidateReport, error) {
	if err := r.a.check(ctx); err != nil {
		return nil, err
	}
	return r.a.s.consolidate(ctx, r.a.id, opts)
}
