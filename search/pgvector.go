package search

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// pgvector on PostgreSQL. When the database has the "vector" extension
// (or the Index can create it), each vec_* table gains a column
// emb vector(dims) with an HNSW cosine index, and KNN runs in the server:
// no process keeps a copy of the vectors. The BYTEA column stays the
// source of truth (the vector cache, Reembed and exports read it); emb is
// written beside it by every writer once the column exists, so processes
// that search in process (the vector cache) and processes that use pgvector can
// share one database. Rows written by a process that opened before the
// column existed have emb NULL: the KNN leg fills those first (a partial
// index makes the check one index probe).

// pgvExtension makes sure the vector extension is installed: true if it is
// (or was just created), false if this role may not create it or the
// server does not have it. Only errors reading the catalog fail.
func (x *Index) pgvExtension(ctx context.Context) (bool, error) {
	installed := func() (bool, error) {
		var version string
		err := x.db.QueryRowContext(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&version)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("search: read extensions: %w", err)
		}
		// Filtered KNN needs iterative index scans (pgvector 0.8).
		var major, minor int
		if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil || major == 0 && minor < 8 {
			x.pgvReason = fmt.Sprintf("pgvector %s is installed; engram needs 0.8 or later", version)
			return false, nil
		}
		return true, nil
	}
	if ok, err := installed(); ok || err != nil || x.pgvReason != "" {
		return ok, err
	}
	if _, err := x.db.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
		// Not available or not allowed; another process creating it at the
		// same moment also lands here, so look again.
		if ok, err2 := installed(); ok || err2 != nil {
			return ok, err2
		}
		x.pgvReason = err.Error()
		return false, nil
	}
	return true, nil
}

// pgvColumnDims returns the dimensions of vec_blocks.emb, 0 when the
// column does not exist.
func pgvColumnDims(ctx context.Context, q Execer) (int, error) {
	var typmod sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT atttypmod FROM pg_attribute
		WHERE attrelid = 'vec_blocks'::regclass AND attname = 'emb' AND NOT attisdropped`).Scan(&typmod)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("search: read vec_blocks columns: %w", err)
	}
	return int(typmod.Int64), nil
}

// createPGVector adds (or retypes) the emb columns for dims, fills them
// from the stored bytes and creates the HNSW indexes. It runs under the
// write lock.
func (x *Index) createPGVector(ctx context.Context, ex Execer, dims int) error {
	have, err := pgvColumnDims(ctx, ex)
	if err != nil {
		return err
	}
	for _, t := range contentKinds {
		k := kinds[t]
		var stmts []string
		switch {
		case have == 0:
			stmts = append(stmts, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN emb vector(%d)`, k.vec, dims))
		case have != dims:
			// Reembed to another dimension: the old values cannot be
			// cast, and are refilled below from the new bytes.
			stmts = append(stmts,
				fmt.Sprintf(`DROP INDEX IF EXISTS %s_emb`, k.vec),
				fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN emb TYPE vector(%d) USING NULL`, k.vec, dims))
		}
		// The owner index lets the planner answer a small agent's query
		// exactly from its own rows, and keep HNSW for large ones.
		stmts = append(stmts,
			fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %[1]s_emb_todo ON %[1]s (rowid) WHERE emb IS NULL`, k.vec),
			fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %[1]s_owner ON %[1]s (owner)`, k.vec))
		for _, s := range stmts {
			if _, err := ex.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("search: add pgvector column to %s: %w", k.vec, err)
			}
		}
		if err := x.pgvFill(ctx, ex, k); err != nil {
			return err
		}
		// After the fill: one bulk build instead of an insert per row.
		if _, err := ex.ExecContext(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %[1]s_emb ON %[1]s
			USING hnsw (emb vector_cosine_ops)`, k.vec)); err != nil {
			return fmt.Errorf("search: create pgvector index on %s: %w", k.vec, err)
		}
		// Statistics now, not at autovacuum's next round: without them
		// the planner guesses the owner filter keeps few rows and sorts
		// the whole table instead of walking the index.
		if _, err := ex.ExecContext(ctx, `ANALYZE `+k.vec); err != nil {
			return fmt.Errorf("search: analyze %s: %w", k.vec, err)
		}
	}
	return nil
}

// pgvFill sets emb for k's rows that lack it, from their stored bytes.
// Vectors of another dimension (left by an earlier embedder, about to be
// replaced by Reembed) stay NULL and so are not searched by pgvector; the
// byte-length condition keeps them from counting as work to do on every
// search.
func (x *Index) pgvFill(ctx context.Context, ex Execer, k *kind) error {
	dims := x.emb.Dimensions()
	sel := fmt.Sprintf(`SELECT rowid, embedding FROM %s WHERE emb IS NULL AND octet_length(embedding) = %d AND rowid > ?
		ORDER BY rowid LIMIT 500`, k.vec, 4*dims)
	// One statement per page of rows: [{"id": …, "e": "[…]"}, …].
	upd := fmt.Sprintf(`UPDATE %s v SET emb = u.e::vector FROM json_to_recordset(?::json) AS u(id bigint, e text)
		WHERE v.rowid = u.id`, k.vec)
	type fill struct {
		ID  int64  `json:"id"`
		Vec string `json:"e"`
	}
	after := int64(-1 << 63)
	for {
		rows, err := ex.QueryContext(ctx, sel, after)
		if err != nil {
			return fmt.Errorf("search: fill %s: %w", k.vec, err)
		}
		var todo []fill
		n := 0
		for rows.Next() {
			n++
			var id int64
			var blob []byte
			if err := rows.Scan(&id, &blob); err != nil {
				rows.Close()
				return fmt.Errorf("search: fill %s: %w", k.vec, err)
			}
			after = id
			if v, err := blobVector(blob); err == nil && len(v) == dims {
				todo = append(todo, fill{id, pgvText(v)})
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("search: fill %s: %w", k.vec, err)
		}
		if n == 0 {
			return nil
		}
		if len(todo) == 0 {
			continue // only vectors of another dimension in this page
		}
		page, err := json.Marshal(todo)
		if err != nil {
			return fmt.Errorf("search: fill %s: %w", k.vec, err)
		}
		if _, err := ex.ExecContext(ctx, upd, string(page)); err != nil {
			return fmt.Errorf("search: fill %s rows %d..%d: %w", k.vec, todo[0].ID, todo[len(todo)-1].ID, err)
		}
	}
}

// pgvText is v in pgvector's text form. strconv's shortest 'g' format
// round-trips float32 exactly.
func pgvText(v []float32) string {
	var b strings.Builder
	b.Grow(len(v) * 10)
	b.WriteByte('[')
	for i, f := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(f), 'g', -1, 32))
	}
	b.WriteByte(']')
	return b.String()
}

// vecInsert is the statement storing one vector in k's table, and args
// builds its arguments: the bytes, and with emb (pgvector) the text form
// too.
func vecInsert(k *kind, emb bool) string { return vecInsertMany(k, emb, 1, false) }

// vecInsertMany is vecInsert for n rows in one statement (vecInsertArgs
// of each row, in order); with upsert a row's earlier vector is replaced
// (the same statement in SQLite and PostgreSQL).
func vecInsertMany(k *kind, emb bool, n int, upsert bool) string {
	row := `(?, ?, ?)`
	cols := `rowid, owner, embedding`
	set := `owner = excluded.owner, embedding = excluded.embedding`
	if emb {
		row, cols = `(?, ?, ?, ?::vector)`, `rowid, owner, embedding, emb`
		set += `, emb = excluded.emb`
	}
	q := fmt.Sprintf(`INSERT INTO %s (%s) VALUES %s`, k.vec, cols, strings.TrimSuffix(strings.Repeat(row+", ", n), ", "))
	if upsert {
		q += ` ON CONFLICT (rowid) DO UPDATE SET ` + set
	}
	return q
}

func (x *Index) vecInsertArgs(id int64, owner string, blob []byte, emb bool) ([]any, error) {
	if !emb {
		return []any{id, owner, blob}, nil
	}
	v, err := blobVector(blob)
	if err != nil {
		return nil, err
	}
	var text any = pgvText(v)
	if len(v) != x.emb.Dimensions() {
		text = nil
	}
	return []any{id, owner, blob, text}, nil
}

// pgvKNN returns up to kk nearest rows of k (in owner's rows unless all)
// from the HNSW index. The scan is iterative in strict order, so a
// selective owner filter still yields kk rows when the owner has them —
// unless it gives up past hnsw.max_scan_tuples: exhausted reports that a
// short answer holds every row there is (one indexed count says so), so
// only a scan that gave up needs the exact fallback.
func (x *Index) pgvKNN(ctx context.Context, k *kind, qv []float32, owner string, all bool, kk int) (hits []knnHit, exhausted bool, err error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = tx.Rollback() }()
	// One round trip: the scan settings for this transaction, and whether
	// any row still lacks emb.
	var todo bool
	err = tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT set_config('hnsw.ef_search', ?, true) IS NOT NULL
		AND set_config('hnsw.iterative_scan', 'strict_order', true) IS NOT NULL
		AND EXISTS (SELECT 1 FROM %s WHERE emb IS NULL AND octet_length(embedding) = %d)`, k.vec, 4*x.emb.Dimensions()),
		strconv.Itoa(min(max(kk, 40), 1000))).Scan(&todo)
	if err != nil {
		return nil, false, err
	}
	if todo {
		// Written by a process that opened before the column existed.
		if err := x.withWriteLock(ctx, func(ctx context.Context, ex Execer) error { return x.pgvFill(ctx, ex, k) }); err != nil {
			return nil, false, err
		}
	}
	where, wargs := "", []any{}
	if !all {
		where, wargs = ` WHERE owner = ?`, []any{owner}
	}
	q := fmt.Sprintf(`SELECT rowid, emb <=> ?::vector AS d FROM %s%s ORDER BY emb <=> ?::vector LIMIT ?`, k.vec, where)
	qt := pgvText(qv)
	hits, scanned, err := queryHits(ctx, tx, q, append(append([]any{qt}, wargs...), qt, kk))
	if err != nil || scanned >= kk {
		return hits, false, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+k.vec+where, wargs...).Scan(&n); err != nil {
		return nil, false, err
	}
	return hits, n <= scanned, nil
}
