package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/search"
)

// A conversation's turns are found together. Of a full-text leg's
// sessionDepth best rows of messages or archival entries, each row's score
// moves sessionPull of the way toward the best score of its session among
// them: a message's session is its batch, an archival entry's its
// conversation key (an entry naming none is a session of its own). A turn
// whose own words match the question weakly rises when its session holds
// the turn the question matches best; the order of sessions' best rows,
// and every score of a row alone in its session, stay as ranked.
// Equivalently each score gains β = sessionPull / (1 − sessionPull) times
// its session's best, over 1 + β (β 0.3). The strength was chosen by
// leave-one-conversation-out over LoCoMo's dev half (docs/retrieval.md).
const (
	sessionPull  = 0.3 / 1.3
	sessionDepth = 100
)

// JSONBKeyer is a Dialect whose archival conversation key is the text
// jsonb gives the value (PostgreSQL: escapes decoded, then written as
// jsonb writes strings) where JSONBConversationKeys is true, not the value
// as written (SQLite): the text cache then makes its keys alike.
type JSONBKeyer interface {
	JSONBConversationKeys() bool
}

// ArchivalKeyIndexer is a Dialect that reads an archival entry's
// conversation key by id from an index rather than from its row:
// ArchivalKeyTable is the table reference of archival aliased alias with
// that index named (SQLite computes the key from the metadata at every
// read of the row).
type ArchivalKeyIndexer interface {
	ArchivalKeyTable(alias string) string
}

// sessioned reports whether full-text legs of k are re-ordered by
// sessions: messages (by batch), and archival entries where the dialect
// names their conversation key.
func (x *Index) sessioned(k *kind) bool {
	switch k.t {
	case search.Messages:
		return true
	case search.Archival:
		_, ok := x.d.(driver.ArchivalConversationer)
		return ok
	}
	return false
}

// namesConversations reports, for a leg ranked in SQL, whether its rows
// can share a session: always for messages (every message is in a
// batch); for archival entries, unless the scope is one agent whose
// entries name no conversation (one probe of the index on the agent and
// the key), as in a store of documents, whose legs are then ranked as
// deep as asked and look no session up.
func (x *Index) namesConversations(ctx context.Context, k *kind, scope search.Scope) (bool, error) {
	switch k.t {
	case search.Messages:
		return true, nil
	case search.Archival:
		ac, ok := x.d.(driver.ArchivalConversationer)
		if !ok {
			return false, nil
		}
		if scope.All {
			return true, nil
		}
		rows, err := x.query(ctx, `SELECT 1 FROM archival a WHERE a.agent = ? AND `+ac.ArchivalConversation("a")+` IS NOT NULL LIMIT 1`, scope.Agent)
		if err != nil {
			return false, fmt.Errorf("search: %s sessions: %w", k.name, err)
		}
		named := rows.Next()
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("search: %s sessions: %w", k.name, err)
		}
		return named, nil
	}
	return false, nil
}

// sessionKeys reads the session key of each of ids of kind k in SQL into
// keys (sessionKey: the batch or conversation key as the engine writes
// it). An id left out of keys (its row went, or names no conversation)
// is a session of its own.
func (x *Index) sessionKeys(ctx context.Context, k *kind, scope search.Scope, ids []int64, keys map[int64]string) error {
	from, id := x.d.IDList(len(ids))
	// A search of one agent's rows reads no owner: every row is the
	// agent's (messages and archival entries are not shared).
	owner := "a.agent"
	if !scope.All {
		owner = "''"
	}
	var q string
	switch k.t {
	case search.Messages:
		q = fmt.Sprintf(`SELECT a.id, %s, a.batch_id FROM %s %s messages a ON a.id = %s`, owner, from, x.d.InOrderJoin(), id)
	case search.Archival:
		ac, ok := x.d.(driver.ArchivalConversationer)
		if !ok {
			return nil
		}
		// The key from k (through the dialect's index where it names one),
		// the owner from a.
		table := "archival k"
		if ki, ok := x.d.(ArchivalKeyIndexer); ok {
			table = ki.ArchivalKeyTable("k")
		}
		join := ""
		if scope.All {
			join = " JOIN archival a ON a.id = k.id"
		}
		q = fmt.Sprintf(`SELECT k.id, %s, %s FROM %s %s %s ON k.id = %s%s`, owner, ac.ArchivalConversation("k"), from, x.d.InOrderJoin(), table, id, join)
	default:
		return nil
	}
	list := make([]byte, 0, 8*len(ids))
	list = append(list, '[')
	for i, id := range ids {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, id, 10)
	}
	list = append(list, ']')
	rows, err := x.query(ctx, q, string(list))
	if err != nil {
		return fmt.Errorf("search: %s sessions: %w", k.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var owner string
		var key sql.NullString
		if err := rows.Scan(&id, &owner, &key); err != nil {
			return fmt.Errorf("search: %s sessions: %w", k.name, err)
		}
		if key.Valid {
			keys[id] = sessionKey(scope, owner, key.String)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("search: %s sessions: %w", k.name, err)
	}
	return nil
}

// bySession re-orders a full-text leg's rows (best first, Source.BM25
// lower is better) by their sessions (see sessionPull) and returns its
// depth best; their BM25 and FTSRank become the re-ordered ones (of a
// leg deeper than sessionDepth, the sessionDepth best are re-ordered and
// the rest stay below them, where their scores already are). Only
// rows that can reach the depth-th place are looked at: a row of score s
// rises at most to s + sessionPull × (best − s), and the depth-th score
// only rises, so a row below (s_depth − sessionPull × best) / (1 −
// sessionPull) stays below it (and a row's session's best scores at
// least as high as the row). cached: the rows were ranked in the text
// cache, whose copy of a row holds its metadata (the keys are read from
// it; the rows it does not hold, from SQL).
func (x *Index) bySession(ctx context.Context, k *kind, scope search.Scope, rs []*hit, depth int, cached bool) ([]*hit, error) {
	rs = rs[:min(len(rs), max(depth, sessionDepth))]
	window := min(len(rs), sessionDepth) // the rows re-ordered
	if window < 2 || depth < 1 {
		return rs[:min(len(rs), depth)], nil
	}
	keys := map[int64]string{}
	lookup := func(rows []*hit) error {
		ids := make([]int64, 0, len(rows))
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		missing := ids
		if cached {
			missing = x.cachedSessionKeys(k, scope, ids, keys)
		}
		if len(missing) > 0 {
			return x.sessionKeys(ctx, k, scope, missing, keys)
		}
		return nil
	}
	if depth >= window {
		if err := lookup(rs[:window]); err != nil {
			return nil, err
		}
		pullSessions(rs[:window], keys)
		return rs[:min(len(rs), depth)], nil
	}
	// The depth best first: their sessions' best are among them, so their
	// moved scores are final, and the least of them, q, is a floor under
	// the depth-th moved score. A row further down of score s rises at
	// most to s + sessionPull × (best − s): only one above (q −
	// sessionPull × best) / (1 − sessionPull) can pass q.
	if err := lookup(rs[:depth]); err != nil {
		return nil, err
	}
	first := make([]float64, depth)
	sess := make([]string, depth)
	has := make([]bool, depth)
	for i, r := range rs[:depth] {
		first[i] = r.Source.BM25
		sess[i], has[i] = keys[r.ID]
	}
	floor := movedFloor(first, sess, has)
	cand := slices.Clone(rs[:depth])
	for _, r := range rs[depth:window] {
		if r.Source.BM25 < floor {
			cand = append(cand, r)
		}
	}
	if err := lookup(cand[depth:]); err != nil {
		return nil, err
	}
	pullSessions(cand, keys)
	return cand[:depth], nil
}

// cachedSessionKeys reads the session keys of ids of kind k into keys
// from the text cache's copy of their rows (sessionKeys' keys, from the
// metadata the copy holds); missing are the ids it does not hold with a
// body, or whose metadata it leaves to the engine.
func (x *Index) cachedSessionKeys(k *kind, scope search.Scope, ids []int64, keys map[int64]string) (missing []int64) {
	c := x.text
	if c == nil || !textBodies[k.t] {
		return ids
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var parts []*textPart
	switch {
	case c.partial && !scope.All:
		// Messages and archival entries are not shared: the agent's
		// partition holds them.
		if p := c.owned[k.t][scope.Agent]; p != nil {
			parts = append(parts, p)
		}
	case !c.partial:
		if p := c.parts[k.t]; p != nil && p.bodies != nil {
			parts = append(parts, p)
		}
	}
	for _, id := range ids {
		var p *textPart
		var slot int32
		for _, op := range parts {
			if sl, in := op.slots[id]; in {
				p, slot = op, sl
				break
			}
		}
		if p == nil || int(slot) >= len(p.bodies) {
			missing = append(missing, id)
			continue
		}
		key, ok, read := p.session(slot, scope.All)
		if !read {
			missing = append(missing, id)
			continue
		}
		if ok {
			keys[id] = key
		}
	}
	return missing
}

// What a textBody's sess holds (textBody.sessOf).
const (
	sessNone   = iota // a session of its own
	sessKey           // the row's batch or conversation key
	sessEngine        // the engine is to say: read in SQL
)

// bodySession is the session of a row of kind t whose metadata object is
// meta, as the text cache reads it: a message's batch, as SQL reads the
// column (a batch that is not text is SQL's to read); an archival entry's
// conversation key (metaConversation).
func bodySession(t search.ContentType, meta string, jsonb bool) (string, uint8) {
	switch t {
	case search.Messages:
		v, read := metaMember(meta, "batch_id")
		switch {
		case !read:
			return "", sessEngine
		case v == "null":
			return "", sessNone
		}
		key, read := jsonString(v)
		if !read {
			return "", sessEngine
		}
		return key, sessKey
	case search.Archival:
		key, named, read := metaConversation(meta, jsonb)
		switch {
		case !read:
			return "", sessEngine
		case !named:
			return "", sessNone
		}
		return key, sessKey
	}
	return "", sessNone
}

// session is the session key (sessionKey) of the row in slot: ok false
// for a row that is a session of its own; read false where the engine is
// to say, or the partition holds no body.
func (p *textPart) session(slot int32, all bool) (key string, ok, read bool) {
	if int(slot) >= len(p.bodies) {
		return "", false, false
	}
	b := &p.bodies[slot]
	switch b.sessOf {
	case sessNone:
		return "", false, true
	case sessEngine:
		return "", false, false
	}
	if all {
		return sessionKey(search.Scope{All: true}, p.docs[slot].owner, b.sess), true, true
	}
	return b.sess, true, true
}

// sessionKey is the session of a row of owner whose batch or
// conversation key is key: the key alone in a search of one agent's rows,
// else prefixed with the owner (its length first: no owner and key pair
// reads as another's).
func sessionKey(scope search.Scope, owner, key string) string {
	if !scope.All {
		return key
	}
	return strconv.Itoa(len(owner)) + ":" + owner + key
}

// jsonString is the text of the JSON string v; ok is false when v is no
// string.
func jsonString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if !strings.ContainsRune(v, '\\') {
		return v[1 : len(v)-1], true
	}
	if !utf8.ValidString(v) {
		// The decoder would replace what SQL reads as it is.
		return "", false
	}
	var out string
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return "", false
	}
	return out, true
}

// sessionFloor is the least score (FTS5's sign: lower is better, so the
// greatest) of a row that a re-ordering by sessions can bring into the
// limit best, given a text cache's limit best (hits, best first): the
// rows past them scoring at least as well (sessionExtra) are what a leg
// ranked sessionDepth deep in SQL keeps of its rows. ok is false when no
// row past them can rise (hits holds every match, or sessionDepth rows).
func sessionFloor(hits []textHit, limit int, pull float64) (floor float64, ok bool) {
	if pull == 0 || len(hits) < limit || len(hits) < 2 || limit >= sessionDepth {
		return 0, false
	}
	top, nth := -hits[0].score, -hits[len(hits)-1].score
	return -(nth - pull*top) / (1 - pull), true
}

// cacheFloor is sessionFloor made tighter where the text cache reads the
// session of each of its limit best (keyOf: sessionKey's key, whether it
// has one, whether the cache reads it): movedFloor, as bySession bounds
// the rows it re-scores.
func cacheFloor(hits []textHit, limit int, pull float64, keyOf func(id int64) (string, bool, bool)) (float64, bool) {
	floor, ok := sessionFloor(hits, limit, pull)
	if !ok {
		return 0, false
	}
	scores := make([]float64, len(hits))
	sess := make([]string, len(hits))
	has := make([]bool, len(hits))
	for i, h := range hits {
		key, named, read := keyOf(h.id)
		if !read {
			return floor, true
		}
		scores[i], sess[i], has[i] = h.score, key, named
	}
	return movedFloor(scores, sess, has), true
}

// sessionExtra reports whether h, a row not in hits, is past the limit
// best's last and within the floor.
func sessionExtra(hits []textHit, h textHit, floor float64) bool {
	w := hits[len(hits)-1]
	return h.score <= floor && (h.score > w.score || (h.score == w.score && h.id > w.id))
}

// sessionSort keeps sessionDepth of the limit best and the rows past
// them (sessionExtra's, in the order met): the best by score, then id,
// where there are more. The rows past the limit best stay in no order
// otherwise: pullSessions orders every row it re-scores.
func sessionSort(hits []textHit, limit int) []textHit {
	if len(hits) <= sessionDepth {
		return hits
	}
	slices.SortFunc(hits[limit:], func(a, b textHit) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return hits[:sessionDepth]
}

// movedScores are rows' scores (Source.BM25's sign) moved toward their
// sessions' best among them.
func movedScores(rs []*hit, keys map[int64]string) []float64 {
	scores := make([]float64, len(rs))
	sess := make([]string, len(rs))
	has := make([]bool, len(rs))
	for i, r := range rs {
		scores[i] = r.Source.BM25
		sess[i], has[i] = keys[r.ID]
	}
	return moveToward(scores, sess, has)
}

// moveToward moves each score (lower is better) toward the best of those
// of its session (sess[i] where has[i]; a row without is a session of its
// own).
func moveToward(scores []float64, sess []string, has []bool) []float64 {
	best := make(map[string]float64, len(scores))
	for i, sc := range scores {
		if has[i] {
			if b, seen := best[sess[i]]; !seen || -sc > b {
				best[sess[i]] = -sc
			}
		}
	}
	moved := make([]float64, len(scores))
	for i, sc := range scores {
		moved[i] = sc
		if has[i] {
			moved[i] = -(-sc + sessionPull*(best[sess[i]]+sc))
		}
	}
	return moved
}

// movedFloor is the score (lower is better) past which a row below the
// depth best cannot rise into them, given the depth best's scores (best
// first) and sessions: their sessions' best are among them, so their
// moved scores are final and the worst of them, q, is a bound on the
// depth-th moved score; a row of score s rises at most to s + pull ×
// (best − s), so only one better than (q − pull × best) / (1 − pull) can
// pass q.
func movedFloor(scores []float64, sess []string, has []bool) float64 {
	q := math.Inf(-1)
	for _, m := range moveToward(scores, sess, has) {
		q = max(q, m)
	}
	return -((-q - sessionPull*-scores[0]) / (1 - sessionPull))
}

// pullSessions moves each row's score toward its session's best and
// orders the rows by it, then as ranked (score, then id): the rows a text
// cache adds past its limit best come in no order.
func pullSessions(rs []*hit, keys map[int64]string) {
	type row struct {
		h         *hit
		moved, at float64
	}
	rows := make([]row, len(rs))
	for i, m := range movedScores(rs, keys) {
		rows[i] = row{h: rs[i], moved: m, at: rs[i].Source.BM25}
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := cmp.Compare(a.moved, b.moved); c != 0 {
			return c
		}
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.h.ID, b.h.ID)
	})
	for i, r := range rows {
		r.h.Source.BM25 = r.moved
		r.h.Source.FTSRank = i + 1
		rs[i] = r.h
	}
}
