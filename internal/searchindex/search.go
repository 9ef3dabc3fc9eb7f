package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/internal/unixnanos"
	"github.com/engram-go/engram/internal/vecmath"
	"github.com/engram-go/engram/search"
)

// HybridDepth is the least number of results Hybrid fetches from each side
// (FTS and Vector) of each content type; it fetches max(4*limit,
// HybridDepth).
const HybridDepth = 50

// vecKMax is the most neighbours a KNN asks for before a filtered search
// falls back to scanning the rows that pass its filters.
const vecKMax = 4096

// hit is a Result as the engine ranks it, with what the engine keeps of
// the row until the page is made: Search returns the Results.
type hit struct {
	search.Result
	// stub: only Type, ID and the ranking fields are set; the row is
	// fetched (and its filters checked again) if it makes the page.
	stub bool
	// toks and termIDs, from the text cache's copy of the row, let the
	// snippet find the query's terms without tokenizing Content
	// (snippeter.snippetOfTokens); cleared once the snippet is made.
	toks    []byte // textBody.toks
	termIDs []uint32
}

// Search runs query over the content scope may see. Any non-empty text is
// a valid query; one with no letters or digits fails with search.ErrInvalidQuery.
// With opts nil, the defaults apply (Auto, all content types, 10 results).
//
// Isolation is part of every SQL statement: FTS queries filter on the
// owner column; vector queries scan only the owner's partition (owner = ?
// in the KNN itself), and reach blocks shared with the agent through the shares
// table with exact distances. Nothing is fetched globally and filtered
// afterwards.
func (x *Index) Search(ctx context.Context, query string, scope search.Scope, opts *search.Options) ([]search.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	rs, err := x.search(ctx, query, scope, opts)
	return rs, ctxErr(ctx, err)
}

func (x *Index) search(ctx context.Context, query string, scope search.Scope, opts *search.Options) ([]search.Result, error) {
	s := settings{Settings: opts.Settings()}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !scope.All && scope.Agent == "" {
		return nil, fmt.Errorf("%w: scope names no agent (set Scope.Agent, or Scope.All for the system view)", search.ErrInvalidQuery)
	}
	mode, err := x.resolveMode(ctx, s.Mode)
	if err != nil {
		return nil, err
	}
	if s.Mode == search.Auto && mode == search.Hybrid && !s.HasVectorWeight {
		// Auto trusts the vectors only as far as the embedder says.
		s.VectorWeight = fusionWeight(x.emb)
		if s.VectorWeight == 0 {
			mode = search.FTS
		}
	}
	expr, err := search.MatchExpression(query)
	if err != nil {
		return nil, err
	}
	terms := analyzer.QueryTerms(query)
	types := s.Types
	if s.hasTagFilter() {
		types &= search.Archival // only archival entries have tags
	}
	if types == 0 {
		return nil, nil
	}
	if types.Has(search.Blocks) {
		if err := x.flushBlocks(ctx); err != nil {
			return nil, err
		}
	}
	var qvec []float32
	if mode == search.Vector || mode == search.Hybrid {
		if types.Has(search.Blocks) {
			if err := x.FlushBlockVectors(ctx); err != nil {
				return nil, err
			}
		}
		if types.Has(search.Archival) {
			if err := x.FlushArchivalVectors(ctx); err != nil {
				return nil, err
			}
		}
		vecs, err := x.Embed(ctx, []string{query})
		if err != nil {
			return nil, fmt.Errorf("search: embed query: %w", err)
		}
		qvec = vecs[0]
	}
	// A page that lost rows to writes between ranking and fetching is
	// ranked again (the caches catch up first); the query is embedded once.
	rs, err := x.rank(ctx, query, mode, types, expr, terms, qvec, scope, &s)
	for try := 0; errors.Is(err, errPageShort) && try < 3; try++ {
		rs, err = x.rank(ctx, query, mode, types, expr, terms, qvec, scope, &s)
	}
	if errors.Is(err, errPageShort) {
		err = nil
	}
	return rs, err
}

// rank runs a search's legs, fuses them and fetches the page.
func (x *Index) rank(ctx context.Context, query string, mode search.Mode, types search.ContentType, expr string, terms []string, qvec []float32, scope search.Scope, sp *settings) ([]search.Result, error) {
	s := *sp
	s.textSynced = new(atomic.Bool)
	// A first search's text partitions load while its vector partitions
	// do, and while its first text leg runs.
	if mode == search.FTS || mode == search.Hybrid {
		ahead := types.Kinds()
		if len(ahead) > 0 && (qvec == nil || x.cache == nil) {
			ahead = ahead[1:]
		}
		defer x.loadAhead(ctx, ahead, terms, scope, &s)()
	}
	if qvec != nil && x.cache != nil {
		ready, err := x.cache.sync(ctx, x.db, x.query)
		if err != nil {
			return nil, err
		}
		if ready {
			// A partial cache loads the searching agent's partitions.
			if ready, err = x.cache.ensureScope(ctx, x.query, types, scope); err != nil {
				return nil, err
			}
		}
		s.vecCache = ready
	}
	depth := s.Limit
	if mode == search.Hybrid {
		depth = max(4*s.Limit, HybridDepth)
	}
	if x.opts.Reranker != nil {
		// The reranker picks among its depth of candidates: each leg
		// supplies that many.
		depth = max(depth, cmp.Or(x.opts.RerankDepth, DefaultRerankDepth))
	}
	// The two sides of a hybrid search run concurrently: FTS in the text
	// cache or SQL, vector KNN in the in-process cache or the database.
	var ftsLegs []ftsLeg
	var vecLists [][]*hit
	var vecErr error
	var wg sync.WaitGroup
	if mode == search.Vector || mode == search.Hybrid {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, t := range types.Kinds() {
				l, err := x.vecSearch(ctx, kinds[t], qvec, scope, &s, depth)
				if err != nil {
					vecErr = err
					return
				}
				vecLists = append(vecLists, l)
			}
		}()
	}
	var ftsErr error
	if mode == search.FTS || mode == search.Hybrid {
		for _, t := range types.Kinds() {
			// A leg of messages or archival entries is re-ordered by
			// sessions (bySession).
			l, cached, sessions, err := x.ftsSearch(ctx, kinds[t], expr, terms, scope, &s, depth, x.sessioned(kinds[t]))
			if err == nil && sessions {
				l, err = x.bySession(ctx, kinds[t], scope, l, depth, cached)
			}
			if err != nil {
				ftsErr = err
				break
			}
			leg := ftsLeg{k: kinds[t], rs: l}
			if cached {
				leg.from = legCache
			}
			ftsLegs = append(ftsLegs, leg)
		}
	}
	wg.Wait()
	if ftsErr != nil {
		return nil, ftsErr
	}
	if vecErr != nil {
		return nil, vecErr
	}
	ftsLists := make([][]*hit, len(ftsLegs))
	for i, l := range ftsLegs {
		ftsLists[i] = l.rs
	}
	// Several content types' full-text lists become one by comparable
	// scores where their scales are known (fuseByScore), by rank where not.
	var ftsFused []*hit
	if len(ftsLegs) > 1 {
		fused, ok, err := x.fuseByScore(ctx, ftsLegs, expr, terms, scope, &s)
		if err != nil {
			return nil, err
		}
		if ok {
			ftsFused = fused
		}
	}
	var ranked []*hit
	switch {
	case mode == search.FTS && len(ftsLists) == 1:
		ranked = ftsLists[0]
		for _, r := range ranked {
			r.Score = -r.Source.BM25
		}
	case mode == search.FTS && ftsFused != nil:
		ranked = ftsFused
		for _, r := range ranked {
			r.Score = r.Source.FTSNorm
		}
	case mode == search.FTS:
		ranked = fuseRRF(ftsLists, nil)
	case mode == search.Vector:
		ranked = mergeByDistance(vecLists)
		for _, r := range ranked {
			r.Score = 1 - r.Source.Distance
		}
	case ftsFused != nil:
		// Hybrid: one full-text list fused by score, one vector list merged
		// by distance (one embedder's distances compare across types), then
		// RRF between the two.
		// The ranks Source reports are the ones fused: positions in
		// the merged lists, so Fused adds up from them.
		vecMerged := mergeByDistance(vecLists)
		for i, r := range ftsFused {
			r.Source.FTSRank = i + 1
		}
		for i, r := range vecMerged {
			r.Source.VectorRank = i + 1
		}
		ranked = fuseRRF([][]*hit{ftsFused, vecMerged}, []float64{1, s.VectorWeight})
		for _, r := range ranked {
			r.Source.VectorWeight = s.VectorWeight
		}
	default:
		weights := make([]float64, 0, len(ftsLists)+len(vecLists))
		for range ftsLists {
			weights = append(weights, 1)
		}
		for range vecLists {
			weights = append(weights, s.VectorWeight)
		}
		ranked = fuseRRF(append(ftsLists, vecLists...), weights)
		for _, r := range ranked {
			r.Source.VectorWeight = s.VectorWeight
		}
	}
	if x.beforeFill != nil {
		x.beforeFill()
	}
	dropped := false
	if x.opts.Reranker != nil {
		// MinScore is on the fused scale: it applies before reranking.
		if s.HasMinScore {
			ranked = slices.DeleteFunc(ranked, func(r *hit) bool { return r.Score < s.MinScore })
			s.HasMinScore = false
		}
		n := len(ranked)
		var err error
		if ranked, err = x.rerank(ctx, query, ranked, scope, &s, terms); err != nil {
			return nil, err
		}
		dropped = len(ranked) < n // stubs whose rows changed, as below
	}
	out := make([]*hit, 0, min(len(ranked), s.Limit))
	for i := 0; i < len(ranked) && len(out) < s.Limit; {
		var page []*hit
		for ; i < len(ranked) && len(out)+len(page) < s.Limit; i++ {
			if r := ranked[i]; !s.HasMinScore || r.Score >= s.MinScore {
				page = append(page, r)
			}
		}
		if err := x.fill(ctx, page, scope, &s, terms); err != nil {
			return nil, err
		}
		// A stub whose row changed or went since its leg ranked it is
		// dropped: the next candidates take its place.
		for _, r := range page {
			if !r.stub {
				out = append(out, r)
			} else {
				dropped = true
			}
		}
	}
	x.snippets(out, terms)
	rs := make([]search.Result, len(out))
	for i, r := range out {
		rs[i] = r.Result
	}
	if dropped && len(out) < s.Limit {
		// The legs' lists, cut at their depth, ran out: ranking again
		// (after the caches catch up) may fill the page.
		return rs, errPageShort
	}
	return rs, nil
}

// errPageShort: a page lost rows to concurrent writes between ranking and
// fetching; Search ranks again.
var errPageShort = errors.New("search: page short of rows changed since ranking")

// fill fetches the rows of the stubs in page (one query per content
// type), re-checking the search's filters in SQL; a stub whose row no
// longer passes stays a stub. terms are the query's, for the snippets.
func (x *Index) fill(ctx context.Context, page []*hit, scope search.Scope, s *settings, terms []string) error {
	// The page's rows as the log stands now, not as the ranking found it
	// (a row deleted or changed since is not shown: errPageShort), read
	// once for all its kinds.
	ps := *s
	ps.textSynced = new(atomic.Bool)
	s = &ps
	for _, t := range contentKinds {
		var ids []int64
		for _, r := range page {
			if r.stub && r.Type == t {
				ids = append(ids, r.ID)
			}
		}
		if len(ids) == 0 {
			continue
		}
		k := kinds[t]
		rows, err := x.rowsOf(ctx, k, ids, scope, s, terms, false)
		if err != nil {
			return err
		}
		byID := make(map[int64]*hit, len(rows))
		for _, r := range rows {
			byID[r.ID] = r
		}
		for _, r := range page {
			if f := byID[r.ID]; r.stub && r.Type == t && f != nil {
				f.Score, f.Source = r.Score, r.Source
				*r = *f
			}
		}
	}
	return nil
}

// rowsOf returns the rows of k with the given ids that pass the search's
// filters, in no particular order, whole or as stubs (idsOnly): from the
// text cache's copy where it holds them (cachedRows), the rest from SQL
// (fetchRows).
func (x *Index) rowsOf(ctx context.Context, k *kind, ids []int64, scope search.Scope, s *settings, terms []string, idsOnly bool) ([]*hit, error) {
	rows, missing, ok, err := x.cachedRows(ctx, k, ids, scope, s, terms, idsOnly)
	if err != nil {
		return nil, err
	}
	if !ok {
		missing = ids
	}
	if len(missing) == 0 {
		return rows, nil
	}
	more, err := x.fetchRows(ctx, k, missing, scope, s, idsOnly)
	if err != nil {
		return nil, err
	}
	return append(rows, more...), nil
}

// fetchRows returns the rows of k with the given ids that pass the
// search's filters (scope included), in no particular order: whole
// results, or stubs holding only Type and ID when idsOnly.
func (x *Index) fetchRows(ctx context.Context, k *kind, ids []int64, scope search.Scope, s *settings, idsOnly bool) ([]*hit, error) {
	where, fargs := filters(x.d, k, scope, s, true)
	cols := x.results[k.t]
	if idsOnly {
		cols = k.alias + ".id"
	}
	from, id := x.d.IDList(len(ids))
	q := fmt.Sprintf(`SELECT %[1]s FROM %[5]s %[6]s %[2]s %[3]s ON %[3]s.id = %[7]s WHERE %[4]s`,
		cols, k.base, k.alias, where, from, x.d.InOrderJoin(), id)
	list := make([]byte, 0, 8*len(ids))
	list = append(list, '[')
	for i, id := range ids {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, id, 10)
	}
	list = append(list, ']')
	rows, err := x.query(ctx, q, append([]any{string(list)}, fargs...)...)
	if err != nil {
		return nil, fmt.Errorf("search: fetch %s rows: %w", k.name, err)
	}
	defer rows.Close()
	out := make([]*hit, 0, len(ids))
	for rows.Next() {
		var r *hit
		if idsOnly {
			r = &hit{Result: search.Result{Type: k.t}, stub: true}
			err = rows.Scan(&r.ID)
		} else {
			r, err = scanResult(rows, k)
		}
		if err != nil {
			return nil, fmt.Errorf("search: fetch %s rows: %w", k.name, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: fetch %s rows: %w", k.name, err)
	}
	return out, nil
}

// snippetsPerWorker is the least number of results worth a goroutine of
// their own when making snippets: a snippet costs a few times what
// starting a goroutine does (figures in docs/performance.md).
const snippetsPerWorker = 5

// snippets fills in the results' snippets, over several goroutines for a
// long page.
func (x *Index) snippets(out []*hit, terms []string) {
	fill := func(rs []*hit) {
		snip := newSnippeter(terms, x.opts.SnippetTokens, &x.stems)
		for i := range rs {
			r := rs[i]
			if r.toks != nil {
				r.Snippet = snip.snippetOfTokens(r.Content, r.toks, r.termIDs)
				r.toks, r.termIDs = nil, nil
			} else {
				r.Snippet = snip.snippet(r.Content)
			}
			if r.Snippet == "" && r.Type == search.Blocks {
				r.Snippet = snip.snippet(search.BlockText(r.Label, "", r.Content))
			}
			if r.Snippet == "" {
				r.Snippet = excerpt(r.Content, 200)
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(out)/snippetsPerWorker)
	if workers <= 1 {
		fill(out)
		return
	}
	var wg sync.WaitGroup
	per := (len(out) + workers - 1) / workers
	for chunk := range slices.Chunk(out, per) {
		wg.Go(func() { fill(chunk) })
	}
	wg.Wait()
}

// ctxErr makes an error caused by ctx ending (a driver may report an
// interrupt)
// match context.Canceled / DeadlineExceeded with errors.Is.
func ctxErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
}

// resolveMode turns Auto into Hybrid or FTS and checks the embedder for
// vector modes.
func (x *Index) resolveMode(ctx context.Context, m search.Mode) (search.Mode, error) {
	switch m {
	case search.FTS:
		return search.FTS, nil
	case search.Auto:
		if x.emb != nil && x.checkEmbedder(ctx, x.db) == nil {
			return search.Hybrid, nil
		}
		return search.FTS, nil
	case search.Vector, search.Hybrid:
		if x.emb == nil {
			return m, fmt.Errorf("%w: %v search needs an embedder", search.ErrNoEmbedder, m)
		}
		if err := x.checkEmbedder(ctx, x.db); err != nil {
			if errors.Is(err, errNotRecorded) {
				return m, fmt.Errorf("%w: the database records no embedder", search.ErrEmbedderMismatch)
			}
			return m, err
		}
		return m, nil
	}
	return m, fmt.Errorf("%w: unknown mode %v", search.ErrInvalidQuery, m)
}

// filters returns the WHERE conditions (joined by AND) and their arguments
// for kind k: scope (unless withScope is false), supersession, time range
// and tags.
func filters(d driver.Dialect, k *kind, scope search.Scope, s *settings, withScope bool) (string, []any) {
	var conds []string
	var args []any
	a := k.alias
	if withScope && !scope.All {
		if k.t == search.Blocks {
			conds = append(conds, `(b.owner = ? OR EXISTS (SELECT 1 FROM shares sh WHERE sh.block_id = b.id AND sh.agent = ?))`)
			args = append(args, scope.Agent, scope.Agent)
		} else {
			conds = append(conds, a+"."+k.owner+" = ?")
			args = append(args, scope.Agent)
		}
	}
	if k.t == search.Archival && !s.IncludeSuperseded {
		conds = append(conds, "a.valid_to IS NULL")
	}
	wc, wa := unixnanos.NewWindow(s.Since, s.Until).Conditions(a + ".created_at")
	conds, args = append(conds, wc...), append(args, wa...)
	if k.t == search.Archival {
		if len(s.TagsAny) > 0 {
			conds = append(conds, `EXISTS (SELECT 1 FROM archival_tags t WHERE t.archival_id = a.id AND t.tag IN (`+
				placeholders(len(s.TagsAny))+`))`)
			for _, t := range s.TagsAny {
				args = append(args, t)
			}
		}
		for _, t := range s.TagsAll {
			conds = append(conds, `EXISTS (SELECT 1 FROM archival_tags t WHERE t.archival_id = a.id AND t.tag = ?)`)
			args = append(args, t)
		}
		for _, f := range s.Metadata {
			// Checked when the search began (search.Settings.Validate).
			c, fargs, _ := MetadataCondition(d, "a.metadata_json", f)
			conds = append(conds, c)
			args = append(args, fargs...)
		}
	}
	if len(conds) == 0 {
		return "1 = 1", nil
	}
	return strings.Join(conds, " AND "), args
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// scanResult scans the kind's result columns plus extra destinations.
func scanResult(rows *sql.Rows, k *kind, extra ...any) (*hit, error) {
	r := &hit{Result: search.Result{Type: k.t}}
	var tags, meta string
	var created int64
	dest := append([]any{&r.ID, &r.Owner, &r.Label, &r.Content, &tags, &meta, unixnanos.Scanner{N: &created}, &r.Superseded}, extra...)
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	decodeJSONColumns(r, tags, meta)
	r.Created = time.Unix(0, created).UTC()
	return r, nil
}

// decodeJSONColumns sets r's Tags and Metadata from a row's tags_json and
// metadata object.
func decodeJSONColumns(r *hit, tags, meta string) {
	if tags != "" && tags != "[]" {
		_ = json.Unmarshal([]byte(tags), &r.Tags) // malformed tags_json: no tags
	}
	if meta != "" && meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &r.Metadata); err != nil {
			r.Metadata = map[string]any{"raw": meta} // not an object: kept, not lost
		}
	}
}

// ftsSearch returns up to limit rows of k matching expr, best first.
//
// The inner query ranks every match by bm25 and keeps the top rows; only
// those are joined to their full rows. Snippets are made later, for the
// results actually returned (see snippet).
// cached reports that the text cache ranked them.
//
// With sessions, the leg is for a re-ordering by sessions (bySession): it
// holds the rows that can reach the limit best once re-ordered, and
// sessions comes back false when no two of them can share a session.
func (x *Index) ftsSearch(ctx context.Context, k *kind, expr string, terms []string, scope search.Scope, s *settings, limit int, sessions bool) (rs []*hit, cached, stillSessions bool, err error) {
	where, fargs := filters(x.d, k, scope, s, true)
	if x.text != nil && !s.hasTagFilter() && len(s.Metadata) == 0 {
		// The cache ranks limit deep and adds the rows a re-ordering by
		// sessions could bring up (sessionFloor).
		var pull float64
		if sessions {
			pull = sessionPull
		}
		rs, ok, err := x.cachedFTS(ctx, k, terms, scope, s, limit, pull)
		if err != nil || ok {
			return rs, ok, sessions, err
		}
	}
	if sessions {
		if sessions, err = x.namesConversations(ctx, k, scope); err != nil {
			return nil, false, false, err
		}
	}
	if sessions {
		// A row's session's best may be below limit.
		limit = max(limit, sessionDepth)
	}
	fp := &driver.FullTextParams{Table: k.base, Alias: k.alias, Index: k.fts, Weights: k.bm25,
		Match: expr, Terms: terms, Columns: x.results[k.t], Where: where, Args: fargs, Limit: limit}
	fp.Owner, fp.Shared = legOwner(k, scope)
	q, args, lowerIsBetter := x.d.FullText(fp)
	sign := 1.0
	if !lowerIsBetter {
		sign = -1
	}
	rs, err = x.rankedRows(ctx, k, q, args, sign)
	return rs, false, sessions, err
}

// legOwner is driver.FullTextParams.Owner and Shared for a leg of k in scope:
// the scope's agent, and for blocks the blocks shared with it too.
func legOwner(k *kind, scope search.Scope) (owner string, shared bool) {
	if scope.All {
		return "", false
	}
	return scope.Agent, k.t == search.Blocks
}

// rankedRows runs a full-text leg's query (result columns, then the score)
// and keeps the rows in order: Source.BM25 is the score times sign, so
// lower is better whatever the dialect's score.
func (x *Index) rankedRows(ctx context.Context, k *kind, q string, args []any, sign float64) ([]*hit, error) {
	rows, err := x.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search: fts %s: %w", k.name, err)
	}
	defer rows.Close()
	var out []*hit
	for rows.Next() {
		var score float64
		r, err := scanResult(rows, k, &score)
		if err != nil {
			return nil, fmt.Errorf("search: fts %s: %w", k.name, err)
		}
		r.Source.FTSRank = len(out) + 1
		r.Source.BM25 = sign * score
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: fts %s: %w", k.name, err)
	}
	return out, nil
}

// vecSearch returns up to limit rows of k nearest to qvec, nearest first.
func (x *Index) vecSearch(ctx context.Context, k *kind, qv []float32, scope search.Scope, s *settings, limit int) ([]*hit, error) {
	qvec := vecmath.Blob(qv)
	out, err := x.knn(ctx, k, qv, qvec, scope, s, limit)
	if err != nil {
		return nil, err
	}
	if k.t == search.Blocks && !scope.All {
		shared, err := x.sharedBlocks(ctx, k, qvec, scope.Agent, s, limit)
		if err != nil {
			return nil, err
		}
		if len(shared) > 0 {
			out = mergeByDistance([][]*hit{out, shared})
			if len(out) > limit {
				out = out[:limit]
			}
		}
	}
	for i, r := range out {
		r.Source.VectorRank = i + 1
	}
	return out, nil
}

type knnHit struct {
	id   int64
	dist float64
}

// knn runs KNN (over the vector cache, or in the database: driver.Vectors.KNN)
// in the scope's partition (over all partitions for Scope.All) and keeps
// the rows that pass the filters. When filters remove too many, it asks
// for more neighbours (up to vecKMax) and then falls back to exact
// distances over the filtered rows.
func (x *Index) knn(ctx context.Context, k *kind, qv []float32, qvec []byte, scope search.Scope, s *settings, limit int) ([]*hit, error) {
	kk := limit
	for {
		var hits []knnHit
		var err error
		exhausted := true // a short answer holds every row there is
		held := false
		if s.vecCache {
			if hits, held = x.cache.knn(k.t, qv, scope.Agent, scope.All, kk); held {
				x.vecAnswers.Add(1)
			}
		}
		if !held {
			var vh []driver.VectorHit
			vh, exhausted, err = x.vec.KNN(ctx, &driver.KNNParams{Table: k.vec, Query: qv, Blob: qvec, Owner: scope.Agent, All: scope.All, K: kk})
			hits = make([]knnHit, len(vh))
			for i, h := range vh {
				hits[i] = knnHit{id: h.ID, dist: h.Distance}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
		}
		if len(hits) == 0 {
			return nil, nil
		}
		ids := make([]int64, len(hits))
		for i, h := range hits {
			ids[i] = h.id
		}
		// Which neighbours pass the filters; their rows are fetched only if
		// they make the page (Index.fill, which checks the filters again).
		// With no filter beyond the owner, the partition the KNN ran in
		// already is one.
		var passed []*hit
		if ownerOnly(k, s) {
			for _, id := range ids {
				passed = append(passed, &hit{Result: search.Result{Type: k.t, ID: id}, stub: true})
			}
		} else if passed, err = x.rowsOf(ctx, k, ids, scope, s, nil, true); err != nil {
			return nil, err
		}
		byID := make(map[int64]*hit, len(passed))
		for _, r := range passed {
			byID[r.ID] = r
		}
		var out []*hit
		for _, h := range hits {
			if r := byID[h.id]; r != nil {
				r.Source.Distance = h.dist
				out = append(out, r)
				if len(out) == limit {
					break
				}
			}
		}
		if len(out) >= limit {
			return out, nil
		}
		if len(hits) < kk {
			if !exhausted {
				break // the database's scan gave up: count exactly
			}
			return out, nil // the partition has no more vectors
		}
		if kk >= vecKMax {
			break
		}
		kk = min(kk*4, vecKMax)
	}
	return x.exactScan(ctx, k, qvec, scope, s, limit)
}

// ownerOnly reports whether the search filters k's rows by owner alone
// (see filters): blocks and messages without a time window.
func ownerOnly(k *kind, s *settings) bool {
	return k.t != search.Archival && s.Since.IsZero() && s.Until.IsZero()
}

// exactScan computes distances for every row passing the filters: the
// fallback when filters are too selective for KNN.
func (x *Index) exactScan(ctx context.Context, k *kind, qvec []byte, scope search.Scope, s *settings, limit int) ([]*hit, error) {
	where, fargs := filters(x.d, k, scope, s, true)
	dist := x.vec.Distance("v.embedding")
	if dist == "" {
		q := fmt.Sprintf(`SELECT %[1]s, v.embedding FROM %[2]s %[3]s JOIN %[4]s v ON v.rowid = %[3]s.id WHERE %[5]s`,
			x.results[k.t], k.base, k.alias, k.vec, where)
		return x.scanDistances(ctx, k, qvec, q, fargs, limit)
	}
	q := fmt.Sprintf(`SELECT %[1]s, %[6]s AS d
		FROM %[2]s %[3]s %[7]s %[4]s v ON v.rowid = %[3]s.id
		WHERE %[5]s AND d IS NOT NULL
		ORDER BY d, %[3]s.id LIMIT ?`, x.results[k.t], k.base, k.alias, k.vec, where, dist, x.d.InOrderJoin())
	return x.distanceQuery(ctx, k, q, append(append([]any{qvec}, fargs...), limit))
}

// sharedBlocks ranks the blocks shared with agent (owned by others) by
// exact distance: shares are few, so no KNN over other owners' partitions.
func (x *Index) sharedBlocks(ctx context.Context, k *kind, qvec []byte, agent string, s *settings, limit int) ([]*hit, error) {
	where, fargs := filters(x.d, k, search.Scope{All: true}, s, false)
	dist := x.vec.Distance("v.embedding")
	if dist == "" {
		q := fmt.Sprintf(`SELECT %[1]s, v.embedding
			FROM shares sh JOIN blocks b ON b.id = sh.block_id JOIN %[2]s v ON v.rowid = b.id
			WHERE sh.agent = ? AND b.owner <> ? AND %[3]s`, x.results[k.t], k.vec, where)
		return x.scanDistances(ctx, k, qvec, q, append([]any{agent, agent}, fargs...), limit)
	}
	q := fmt.Sprintf(`SELECT %[1]s, %[4]s AS d
		FROM shares sh %[5]s blocks b ON b.id = sh.block_id %[5]s %[2]s v ON v.rowid = b.id
		WHERE sh.agent = ? AND b.owner <> ? AND %[3]s AND d IS NOT NULL
		ORDER BY d, b.id LIMIT ?`, x.results[k.t], k.vec, where, dist, x.d.InOrderJoin())
	args := append(append([]any{qvec, agent, agent}, fargs...), limit)
	return x.distanceQuery(ctx, k, q, args)
}

func (x *Index) distanceQuery(ctx context.Context, k *kind, q string, args []any) ([]*hit, error) {
	rows, err := x.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
	}
	defer rows.Close()
	var out []*hit
	for rows.Next() {
		var d float64
		r, err := scanResult(rows, k, &d)
		if err != nil {
			return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
		}
		r.Source.Distance = d
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: vector %s: %w", k.name, err)
	}
	return out, nil
}

// mergeByDistance merges vector lists (each nearest first) into one,
// nearest first. Distances of one embedder are comparable across content
// types.
func mergeByDistance(lists [][]*hit) []*hit {
	var all []*hit
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.SortStableFunc(all, func(a, b *hit) int {
		if c := cmp.Compare(a.Source.Distance, b.Source.Distance); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return all
}

// fuseRRF merges ranked lists (each best first) by reciprocal-rank fusion:
// a result's Fused score is the sum of 1/(RRFK+rank) over the lists it
// appears in (rank is 1-based). The same row in several lists (FTS and
// vector) becomes one result carrying both sides' Source fields. Ties go to
// the better best rank, then content type, then id.
// fuseRRF fuses ranked lists by reciprocal rank; weights (nil = all 1)
// scale each list's contributions. It reuses the lists' Results.
func fuseRRF(lists [][]*hit, weights []float64) []*hit {
	// The sort keys are copied in: comparing through r would chase a
	// pointer per comparison.
	type fused struct {
		score float64
		best  int // the best rank in any list
		typ   search.ContentType
		id    int64
		r     *hit
	}
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	// The lists' Results are fused in place (the first list holding a row
	// keeps it): callers hand over lists built for this search alone.
	// One map per content type, keyed by id alone: a struct key hashes
	// several times slower, and fusion hashes every listed row.
	var merged [search.AllContent + 1]map[int64]int
	order := make([]fused, 0, n)
	for li, l := range lists {
		w := 1.0
		if weights != nil {
			w = weights[li]
		}
		for i, r := range l {
			byID := merged[r.Type&search.AllContent]
			if byID == nil {
				byID = make(map[int64]int, n)
				merged[r.Type&search.AllContent] = byID
			}
			rank := i + 1
			j, ok := byID[r.ID]
			if !ok {
				r.Source.Fused = 0
				j = len(order)
				byID[r.ID] = j
				order = append(order, fused{r: r, best: rank, typ: r.Type, id: r.ID})
			} else {
				f := &order[j]
				m := f.r
				if r.Source.FTSRank != 0 && m.Source.FTSRank == 0 {
					m.Source.FTSRank, m.Source.BM25 = r.Source.FTSRank, r.Source.BM25
				}
				if r.Source.VectorRank != 0 && m.Source.VectorRank == 0 {
					m.Source.VectorRank, m.Source.Distance = r.Source.VectorRank, r.Source.Distance
				}
				f.best = min(f.best, rank)
			}
			order[j].r.Source.Fused += w / float64(search.RRFK+rank)
		}
	}
	sorted := make([]*fused, len(order))
	for i := range order {
		f := &order[i]
		f.r.Score = f.r.Source.Fused
		f.score = f.r.Score
		sorted[i] = f
	}
	// A total order ((type, id) is unique): no need for a stable sort.
	slices.SortFunc(sorted, func(a, b *fused) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		if a.best != b.best {
			return a.best - b.best
		}
		if a.typ != b.typ {
			return cmp.Compare(a.typ, b.typ)
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]*hit, len(sorted))
	for i, f := range sorted {
		out[i] = f.r
	}
	return out
}

// excerpt returns the start of s, at most n bytes, cut at a word boundary,
// with Ellipsis when cut.
func excerpt(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := analyzer.TruncateUTF8(s, n)
	if i := strings.LastIndexFunc(cut, unicode.IsSpace); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRightFunc(cut, unicode.IsSpace) + search.Ellipsis
}
