package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// maxTokenCounts bounds the token_counts table; saving past it deletes the
// oldest rows.
const maxTokenCounts = 100_000

// TokenCounts returns the persisted token counts for the given text hashes
// under a tokenizer encoding (a cache the builder fills through
// SaveTokenCounts, so a process that starts cold does not tokenize every
// block again). Hashes with no count are absent from the map.
func (c *Store) TokenCounts(ctx context.Context, encoding string, hashes []uint64) (map[uint64]int, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	out := make(map[uint64]int, len(hashes))
	if len(hashes) == 0 {
		return out, nil
	}
	ids := make([]int64, len(hashes))
	for i, h := range hashes {
		ids[i] = int64(h)
	}
	list, _ := json.Marshal(ids)
	q := `SELECT hash, tokens FROM token_counts WHERE encoding = ? AND hash IN (` + c.be.JSONInt64s(len(ids)) + `)`
	rows, err := c.rdb.QueryContext(ctx, q, encoding, string(list))
	if err != nil {
		return nil, fmt.Errorf("memory: read token counts (%s): %w", encoding, err)
	}
	defer rows.Close()
	for rows.Next() {
		var h int64
		var n int
		if err := rows.Scan(&h, &n); err != nil {
			return nil, fmt.Errorf("memory: read token counts (%s): %w", encoding, err)
		}
		out[uint64(h)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: read token counts (%s): %w", encoding, err)
	}
	return out, nil
}

// SaveTokenCounts persists token counts by text hash under a tokenizer
// encoding (see TokenCounts). Existing counts are kept.
func (c *Store) SaveTokenCounts(ctx context.Context, encoding string, counts map[uint64]int) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	if len(counts) == 0 {
		return nil
	}
	// Inserted in hash order: two writers whose counts overlap wait for
	// each other's rows in one order, never in a cycle (no lock of ours:
	// PostgreSQL's writers run in parallel).
	hashes := slices.Sorted(maps.Keys(counts))
	err := c.write(ctx, nil, func(ctx context.Context, tx *sql.Tx) error {
		var b strings.Builder
		args := make([]any, 0, 3*min(len(counts), 300))
		flush := func() error {
			if len(args) == 0 {
				return nil
			}
			_, err := tx.Exec(`INSERT INTO token_counts (encoding, hash, tokens) VALUES `+b.String()+
				` ON CONFLICT (encoding, hash) DO NOTHING`, args...)
			b.Reset()
			args = args[:0]
			return err
		}
		for _, h := range hashes {
			n := counts[h]
			if len(args) > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?)")
			args = append(args, encoding, int64(h), n)
			if len(args) == cap(args) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM token_counts WHERE id <= (SELECT max(id) FROM token_counts) - ?`, maxTokenCounts)
		return err
	})
	if err != nil {
		return fmt.Errorf("memory: save %d token counts (%s): %w", len(counts), encoding, err)
	}
	return nil
}
