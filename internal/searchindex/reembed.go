package searchindex

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/vecmath"
	"github.com/engram-go/engram/search"
)

// Reembed switches the database to the Index's embedder: it recomputes the
// vector of every block, archival entry and message with it, replaces the
// vector tables (their dimension may change) and records the embedder in
// meta. progress, if not nil, is called after each batch with the rows
// embedded so far and the total.
//
// It works in two phases so the write lock is not held while a slow
// embedder runs: first every row's vector is computed into a staging table
// (search_reembed) in small transactions; then, under one write
// transaction, rows that changed or appeared meanwhile are embedded again,
// the vector tables are rebuilt from the staging table and the record is
// switched. Until that transaction commits, the old vectors and record stay
// in force; if it fails or ctx is cancelled nothing changes (the staging
// table is cleared by the next run). Run one Reembed per database at a time.
func (x *Index) Reembed(ctx context.Context, progress func(done, total int)) error {
	if x.emb == nil {
		return search.ErrNoEmbedder
	}
	return ctxErr(ctx, x.reembed(ctx, progress))
}

func (x *Index) reembed(ctx context.Context, progress func(done, total int)) error {
	x.reembedMu.Lock()
	defer x.reembedMu.Unlock()
	if progress == nil {
		progress = func(int, int) {}
	}
	if err := x.vec.Staging(ctx); err != nil {
		return fmt.Errorf("search: reembed: create staging table: %w", err)
	}
	if _, err := x.db.ExecContext(ctx, `DELETE FROM search_reembed`); err != nil {
		return fmt.Errorf("search: reembed: clear staging table: %w", err)
	}
	total := 0
	for _, t := range contentKinds {
		var n int
		if err := x.db.QueryRowContext(ctx, "SELECT count(*) FROM "+kinds[t].base).Scan(&n); err != nil {
			return fmt.Errorf("search: reembed: count %s: %w", kinds[t].name, err)
		}
		total += n
	}
	progress(0, total)

	// Phase 1: stage vectors, a batch per transaction, without the lock.
	done := 0
	for _, t := range contentKinds {
		k := kinds[t]
		after := int64(-1 << 63)
		for {
			batch, err := x.readRows(ctx, x.db, k, after, x.opts.ReembedBatch)
			if err != nil {
				return err
			}
			if len(batch) == 0 {
				break
			}
			after = batch[len(batch)-1].id
			if err := x.stage(ctx, k, batch); err != nil {
				return err
			}
			done += len(batch)
			progress(min(done, total), total)
		}
	}

	// Phase 2: swap holding the whole store (every other writer waits).
	err := x.withWriteLock(ctx, []driver.WriteLock{driver.StoreLock()}, func(ctx context.Context, conn driver.Execer) error {
		// The rows go in without the engine's own vector index, which
		// EndReplace builds once, over full tables.
		if err := x.vec.BeginReplace(ctx, conn); err != nil {
			return fmt.Errorf("search: reembed: empty the vector tables: %w", err)
		}
		for _, t := range contentKinds {
			if err := x.swapIn(ctx, conn, kinds[t]); err != nil {
				return err
			}
		}
		// Every archival entry has its vector now (under the write lock).
		if _, err := conn.ExecContext(ctx, `DELETE FROM vec_archival_dirty`); err != nil {
			return fmt.Errorf("search: reembed: clear archival marks: %w", err)
		}
		if err := x.vec.EndReplace(ctx, conn); err != nil {
			return fmt.Errorf("search: reembed: index the vectors: %w", err)
		}
		if err := x.recordEmbedder(ctx, conn); err != nil {
			return err
		}
		// Kind 0: every vector changed; caches reload.
		if _, err := conn.ExecContext(ctx, `INSERT INTO search_vec_log (kind, id) VALUES (0, 0)`); err != nil {
			return fmt.Errorf("search: reembed: log: %w", err)
		}
		if _, err := conn.ExecContext(ctx, `DELETE FROM search_reembed`); err != nil {
			return fmt.Errorf("search: reembed: clear staging table: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	progress(total, total)
	return nil
}

type reembedRow struct {
	id    int64
	owner string
	text  string
}

// readRows reads up to limit rows of k with id > after, in id order.
func (x *Index) readRows(ctx context.Context, q driver.Execer, k *kind, after int64, limit int) ([]reembedRow, error) {
	query := fmt.Sprintf(`SELECT %[1]s.id, %[1]s.%[2]s, %[3]s FROM %[4]s %[1]s WHERE %[1]s.id > ? ORDER BY %[1]s.id LIMIT ?`,
		k.alias, k.owner, k.text, k.base)
	rows, err := q.QueryContext(ctx, query, after, limit)
	if err != nil {
		return nil, fmt.Errorf("search: reembed: read %s: %w", k.name, err)
	}
	defer rows.Close()
	var out []reembedRow
	for rows.Next() {
		var r reembedRow
		if k.t == search.Blocks {
			var label, desc, rendered string
			if err := rows.Scan(&r.id, &r.owner, &label, &desc, &rendered); err != nil {
				return nil, fmt.Errorf("search: reembed: read %s: %w", k.name, err)
			}
			r.text = search.BlockText(label, desc, rendered)
		} else if err := rows.Scan(&r.id, &r.owner, &r.text); err != nil {
			return nil, fmt.Errorf("search: reembed: read %s: %w", k.name, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: reembed: read %s: %w", k.name, err)
	}
	return out, nil
}

// embedRows embeds the non-blank rows; blank ones get nil.
func (x *Index) embedRows(ctx context.Context, batch []reembedRow) ([][]float32, error) {
	var texts []string
	var at []int
	for i, r := range batch {
		if strings.TrimSpace(r.text) != "" {
			texts = append(texts, r.text)
			at = append(at, i)
		}
	}
	out := make([][]float32, len(batch))
	for start := 0; start < len(texts); start += x.opts.ReembedBatch {
		end := min(start+x.opts.ReembedBatch, len(texts))
		vecs, err := x.Embed(ctx, texts[start:end])
		if err != nil {
			return nil, fmt.Errorf("search: reembed: %w", err)
		}
		for i, v := range vecs {
			out[at[start+i]] = v
		}
	}
	return out, nil
}

func (x *Index) stage(ctx context.Context, k *kind, batch []reembedRow) error {
	vecs, err := x.embedRows(ctx, batch)
	if err != nil {
		return err
	}
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("search: reembed: stage %s: %w", k.name, err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO search_reembed (kind, id, hash, embedding) VALUES (?, ?, ?, ?)
		ON CONFLICT (kind, id) DO UPDATE SET hash = excluded.hash, embedding = excluded.embedding`)
	if err != nil {
		return fmt.Errorf("search: reembed: stage %s: %w", k.name, err)
	}
	defer stmt.Close()
	for i, r := range batch {
		if vecs[i] == nil {
			continue
		}
		if _, err := stmt.ExecContext(ctx, int(k.t), r.id, textHash(r.text), vecmath.Blob(vecs[i])); err != nil {
			return fmt.Errorf("search: reembed: stage %s %d: %w", k.name, r.id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("search: reembed: stage %s: %w", k.name, err)
	}
	return nil
}

// swapIn fills k's fresh vector table from the staging table, re-embedding
// rows whose text changed (or that appeared) since they were staged. It
// pages through the rows so memory stays bounded.
func (x *Index) swapIn(ctx context.Context, conn driver.Execer, k *kind) error {
	ins, err := conn.PrepareContext(ctx, x.vec.Insert(k.vec, 1, false, true))
	if err != nil {
		return fmt.Errorf("search: reembed: fill %s: %w", k.vec, err)
	}
	defer ins.Close()
	query := fmt.Sprintf(`SELECT %[1]s.id, %[1]s.%[2]s, s.hash, s.embedding, %[3]s
		FROM %[4]s %[1]s LEFT JOIN search_reembed s ON s.kind = ? AND s.id = %[1]s.id
		WHERE %[1]s.id > ? ORDER BY %[1]s.id LIMIT 1000`, k.alias, k.owner, k.text, k.base)
	after := int64(-1 << 63)
	for {
		rows, err := conn.QueryContext(ctx, query, int(k.t), after)
		if err != nil {
			return fmt.Errorf("search: reembed: read %s: %w", k.name, err)
		}
		var stale []reembedRow
		type ready struct {
			id    int64
			owner string
			blob  []byte
		}
		var good []ready
		n := 0
		for rows.Next() {
			var r reembedRow
			var hash sql.NullInt64
			var blob []byte
			var err error
			if k.t == search.Blocks {
				var label, desc, rendered string
				err = rows.Scan(&r.id, &r.owner, &hash, &blob, &label, &desc, &rendered)
				r.text = search.BlockText(label, desc, rendered)
			} else {
				err = rows.Scan(&r.id, &r.owner, &hash, &blob, &r.text)
			}
			if err != nil {
				rows.Close()
				return fmt.Errorf("search: reembed: read %s: %w", k.name, err)
			}
			n++
			after = r.id
			switch {
			case strings.TrimSpace(r.text) == "":
			case hash.Valid && hash.Int64 == textHash(r.text):
				good = append(good, ready{r.id, r.owner, blob})
			default:
				stale = append(stale, r)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("search: reembed: read %s: %w", k.name, err)
		}
		if n == 0 {
			if k.t == search.Blocks {
				// Every block's vector is current now (under the write lock).
				if _, err := conn.ExecContext(ctx, `DELETE FROM vec_blocks_dirty`); err != nil {
					return fmt.Errorf("search: reembed: clear block marks: %w", err)
				}
			}
			return nil
		}
		put := func(id int64, owner string, blob []byte) error {
			args, err := x.vec.InsertArgs(id, owner, blob, true)
			if err == nil {
				_, err = ins.ExecContext(ctx, args...)
			}
			if err != nil {
				return fmt.Errorf("search: reembed: fill %s %d: %w", k.vec, id, err)
			}
			return nil
		}
		for _, g := range good {
			if err := put(g.id, g.owner, g.blob); err != nil {
				return err
			}
		}
		if len(stale) > 0 {
			vecs, err := x.embedRows(ctx, stale)
			if err != nil {
				return err
			}
			for i, r := range stale {
				if err := put(r.id, r.owner, vecmath.Blob(vecs[i])); err != nil {
					return err
				}
			}
		}
	}
}
