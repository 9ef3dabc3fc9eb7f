package memory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Write-time deduplication of archival entries (Options.KeepDuplicates):
// an entry's key is a digest of its normalised content and of the
// conversation its metadata names; the database keeps the key unique
// among an agent's live entries (migration sqlite/0027, postgres/0024).

// NormalizeContent is the form of an archival entry's content that
// write-time deduplication compares: invalid UTF-8 replaced by U+FFFD,
// Unicode NFC, case-folded (full Unicode folding, then lower case, so
// "Straße" and "STRASSE" are equal), every run of white space one space, trimmed.
// Compatibility characters are kept (NFC, not NFKC): a superscript or a
// circled digit carries meaning, so "10² m²" and "102 m2" are two texts.
// It is idempotent.
func NormalizeContent(s string) string {
	if isASCII(s) {
		return normalizeASCII(s)
	}
	return normalizeUnicode(s)
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// normalizeASCII is normalizeUnicode for ASCII text, which NFC leaves as
// it is and folding and lower-casing map letter by letter: upper case to
// lower, white space (the six ASCII characters unicode.IsSpace takes)
// collapsed and trimmed. Most content is ASCII, and the Unicode path's
// NFC and full case folding cost several times the whole write's SQL on
// long entries (docs/performance.md).
func normalizeASCII(s string) string {
	b := make([]byte, 0, len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\v', '\f', '\r':
			space = len(b) > 0
			continue
		}
		if space {
			b = append(b, ' ')
			space = false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}

// normalizeUnicode is NormalizeContent for any text.
func normalizeUnicode(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = norm.NFC.String(s)
	// Lower-cased after folding: folding maps a few scripts' lower case
	// to upper (Cherokee), which lower-casing maps back, so that the
	// result is a fixed point.
	s = strings.ToLower(cases.Fold().String(s))
	// Folding may leave a string that is not NFC (a folded letter before
	// a combining mark): normalise again so the result is a fixed point.
	s = norm.NFC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if out != s && !norm.NFC.IsNormalString(out) {
		// Removing white space joined a base and a combining mark.
		return normalizeUnicode(out)
	}
	return out
}

// conversationKeys are the metadata keys that name an entry's
// conversation, in the order they are looked up (as the search index's
// conversation_key column reads them, SQLite migration 0028).
var conversationKeys = [...]string{"conversation", "conversation_id", "session", "session_id", "thread", "thread_id"}

// conversationOf is the conversation an entry's metadata names: the first
// of conversationKeys holding a string other than "" or a number, as that
// value's JSON text (the string "3" and the number 3 are two
// conversations); "" when it names none.
func conversationOf(meta map[string]any) string {
	for _, k := range conversationKeys {
		switch v := meta[k].(type) {
		case string:
			if v == "" {
				continue
			}
		case json.Number:
			// Stored metadata read back (decodeMetadata): its text is
			// what json.Marshal wrote at insert, exact past 2^53.
			return v.String()
		case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		default:
			continue
		}
		if b, err := json.Marshal(meta[k]); err == nil {
			return string(b)
		}
	}
	return ""
}

// decodeMetadata decodes stored metadata JSON with numbers as
// json.Number, so that an integer past 2^53 (a snowflake thread id) is
// read, compared and written back exactly.
func decodeMetadata(s string) (map[string]any, error) {
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// dedupKey is the key of an entry of content in conversation conv: the
// first 128 bits of SHA-256 over both, hex.
func dedupKey(content, conv string) string {
	h := sha256.New()
	h.Write([]byte(conv))
	h.Write([]byte{0})
	h.Write([]byte(NormalizeContent(content)))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// entryKey is e's key, or "" when the store keeps duplicates.
func (c *Store) entryKey(e *ArchivalEntry) string {
	if c.opts.KeepDuplicates {
		return ""
	}
	return dedupKey(e.Content, conversationOf(e.Metadata))
}

// mergeMetadata is the metadata of an entry old that a duplicate with
// metadata add is merged into: old's keys keep their values, add's other
// keys are added. changed says whether any was.
func mergeMetadata(old, add map[string]any) (map[string]any, bool) {
	var out map[string]any
	for k, v := range add {
		if _, ok := old[k]; ok {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(old)+len(add))
			for k, v := range old {
				out[k] = v
			}
		}
		out[k] = v
	}
	if out == nil {
		return old, false
	}
	return out, true
}

// liveByKey reads agent's live entry with key, with its stored metadata
// and tags JSON; ok is false when there is none.
func liveByKey(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, agent, key string) (e ArchivalEntry, meta, tags string, ok bool, err error) {
	row := q.QueryRowContext(ctx, `SELECT `+archivalCols+`, metadata_json, tags_json FROM archival
		WHERE agent = ? AND content_key = ? AND valid_to IS NULL`, agent, key)
	e, err = scanArchival(scanExtra{row, []any{&meta, &tags}})
	if errors.Is(err, sql.ErrNoRows) {
		return e, "", "", false, nil
	}
	if err != nil {
		return e, "", "", false, fmt.Errorf("memory: read the live archival entry of %q with key %s: %w", agent, key, err)
	}
	if e.Metadata, err = decodeMetadata(meta); err != nil {
		return e, "", "", false, fmt.Errorf("memory: archival %d metadata: %w", e.ID, err)
	}
	return e, meta, tags, true, nil
}

// scanExtra scans archivalCols and then more columns.
type scanExtra struct {
	s     scanner
	extra []any
}

func (x scanExtra) Scan(dest ...any) error { return x.s.Scan(append(dest, x.extra...)...) }

// mergeDuplicate merges row into agent's live entry with row's key, inside
// tx: the entry gets the union of both tags and row's metadata keys it
// lacks (its own keep their values). A merge that would take the entry
// past Options.MaxMetadataBytes or MaxTags keeps the entry as it is; one
// that would take the agent past its quota fails with ErrQuota. On
// success row.e is the entry, Duplicate set. ok is false when no live
// entry has the key.
func (c *Store) mergeDuplicate(ctx context.Context, tx *sql.Tx, row *archivalRow) (ok bool, err error) {
	agent := row.e.Agent
	old, oldMeta, oldTags, ok, err := liveByKey(ctx, tx, agent, row.key)
	if err != nil || !ok {
		return false, err
	}
	if old.Metadata == nil {
		old.Metadata = map[string]any{}
	}
	tags := normTags(append(slices.Clone(old.Tags), row.e.Tags...))
	meta, metaChanged := mergeMetadata(old.Metadata, row.e.Metadata)
	if (metaChanged || len(tags) != len(old.Tags)) && (c.opts.MaxTags <= 0 || len(tags) <= c.opts.MaxTags) {
		metaJSON, err := json.Marshal(meta)
		if err != nil {
			return false, invalidArg("archival metadata for %q: %v", agent, err)
		}
		if m := c.opts.MaxMetadataBytes; m <= 0 || len(metaJSON) <= m {
			tagsJSON, _ := json.Marshal(append([]string{}, tags...))
			delta := archivalBytes(old.Content, string(metaJSON), string(tagsJSON)) - archivalBytes(old.Content, oldMeta, oldTags)
			if err := c.checkQuota(ctx, tx, agent, delta); err != nil {
				return false, err
			}
			if _, err := c.txExec(ctx, tx, archivalMergeSQL,
				string(metaJSON), string(tagsJSON), strings.Join(tags, " "), old.ID); err != nil {
				return false, fmt.Errorf("memory: merge a duplicate into archival %d of %q: %w", old.ID, agent, err)
			}
			for _, t := range tags {
				if !slices.Contains(old.Tags, t) {
					if _, err := tx.ExecContext(ctx, archivalTagSQL, old.ID, t); err != nil {
						return false, fmt.Errorf("memory: tag archival %d: %w", old.ID, err)
					}
				}
			}
			old.Metadata, old.Tags = meta, tags
		}
	}
	old.Duplicate = true
	row.e = old
	return true, nil
}

// liveKeys is which of keys agent's live entries hold, read in q.
func liveKeys(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, agent string, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	for chunk := range slices.Chunk(keys, 500) {
		args := make([]any, 0, len(chunk)+1)
		args = append(args, agent)
		for _, k := range chunk {
			args = append(args, k)
		}
		rows, err := q.QueryContext(ctx, `SELECT content_key FROM archival WHERE agent = ? AND valid_to IS NULL AND content_key IN (?`+
			strings.Repeat(", ?", len(chunk)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("memory: look up archival keys of %q: %w", agent, err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return nil, err
			}
			out[k] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// newBytes is what the rows whose keys are not live already add.
func newBytes(rows []*archivalRow, live map[string]bool) int64 {
	var n int64
	for _, r := range rows {
		if r.key == "" || !live[r.key] {
			n += r.bytes()
		}
	}
	return n
}

// dedupBatch merges rows with equal keys into the first of them (tags
// and metadata as mergeDuplicate merges them). It returns the distinct
// rows and, for each of rows, the index of its distinct row.
func dedupBatch(rows []*archivalRow) (uniq []*archivalRow, of []int, err error) {
	first := map[string]int{}
	of = make([]int, len(rows))
	for i, r := range rows {
		if r.key == "" {
			of[i] = len(uniq)
			uniq = append(uniq, r)
			continue
		}
		j, ok := first[r.key]
		if !ok {
			first[r.key] = len(uniq)
			of[i] = len(uniq)
			uniq = append(uniq, r)
			continue
		}
		of[i] = j
		u := uniq[j]
		tags := normTags(append(slices.Clone(u.e.Tags), r.e.Tags...))
		meta, changed := mergeMetadata(u.e.Metadata, r.e.Metadata)
		if changed || len(tags) != len(u.e.Tags) {
			mj, err := json.Marshal(meta)
			if err != nil {
				return nil, nil, err
			}
			tj, _ := json.Marshal(append([]string{}, tags...))
			cp := *u
			cp.e.Tags, cp.e.Metadata, cp.meta, cp.tags = tags, meta, string(mj), string(tj)
			uniq[j] = &cp
		}
	}
	return uniq, of, nil
}

// backfillKeys computes the keys of agent entries that have none (written
// before migration sqlite/0027 / postgres/0024, or by Import), oldest
// first, in batches of 1000: a live entry whose key another live entry of
// its agent already holds gets "" (it stays stored and live; consolidation
// finds it), so the oldest live entry of a set of duplicates keeps the key.
// It returns how many rows it keyed.
func (c *Store) backfillKeys(ctx context.Context) (int, error) {
	total := 0
	var after int64
	for {
		rows, err := c.rdb.QueryContext(ctx, `SELECT id, agent, content, metadata_json, valid_to IS NULL FROM archival
			WHERE content_key IS NULL AND id > ? ORDER BY id LIMIT 1000`, after)
		if err != nil {
			return total, fmt.Errorf("memory: read archival entries without keys: %w", err)
		}
		type pending struct {
			id         int64
			agent, key string
			live       bool
		}
		var batch []pending
		for rows.Next() {
			var p pending
			var content, meta string
			if err := rows.Scan(&p.id, &p.agent, &content, &meta, &p.live); err != nil {
				rows.Close()
				return total, fmt.Errorf("memory: read archival entries without keys: %w", err)
			}
			m, _ := decodeMetadata(meta)
			p.key = dedupKey(content, conversationOf(m))
			batch = append(batch, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return total, fmt.Errorf("memory: read archival entries without keys: %w", err)
		}
		if len(batch) == 0 {
			return total, nil
		}
		agents := make([]string, 0, len(batch))
		for _, p := range batch {
			agents = append(agents, p.agent)
		}
		slices.Sort(agents)
		err = c.write(ctx, agentLocks(slices.Compact(agents)...), func(ctx context.Context, tx *sql.Tx) error {
			for _, p := range batch {
				if _, err := tx.ExecContext(ctx, `UPDATE archival SET content_key = CASE WHEN ? AND EXISTS (SELECT 1 FROM archival o
					WHERE o.agent = ? AND o.content_key = ? AND o.valid_to IS NULL) THEN '' ELSE ? END
					WHERE id = ? AND content_key IS NULL`, p.live, p.agent, p.key, p.key, p.id); err != nil {
					return fmt.Errorf("memory: key archival %d of %q: %w", p.id, p.agent, err)
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += len(batch)
		after = batch[len(batch)-1].id
	}
}
