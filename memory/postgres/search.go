package postgres

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/engram-go/engram/driver"
)

// SearchDialect is the search engine's driver.Dialect for PostgreSQL. Full text:
// each searchable table has a tsvector column "fts" (english
// configuration, weighted like the FTS5 columns: labels and tags A,
// descriptions and content B, rendered blocks and metadata values C) with
// a GIN index, ranked by IDF-weighted ts_rank. Queries go through the same
// sanitising as FTS5: only the letter/digit terms reach to_tsquery, joined
// by OR, so any string is a valid query. Vectors: the tables are part of
// the schema; KNN runs in pgvector when the extension is there (or can be
// created), else the search index's in-process vector cache is the only
// KNN. The zero value is ready to use; it holds no state.
type SearchDialect struct{}

var _ driver.Dialect = SearchDialect{}

// SearchDialect returns the dialect the store's search index runs on.
func (b *Backend) SearchDialect() driver.Dialect { return SearchDialect{} }

// Name returns "postgres".
func (SearchDialect) Name() string { return "postgres" }

// SchemaVersionQuery reads the schema's migration version
// (searchindex.SchemaVersioner).
func (SearchDialect) SchemaVersionQuery() string { return `SELECT version FROM engram_schema` }

// CheckSchema reports whether search_text_log (migration 0008) is in the
// current schema; the full-text columns come with migration 0001.
func (SearchDialect) CheckSchema(ctx context.Context, db *sql.DB) (bool, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_class
		WHERE relname = 'search_text_log' AND relnamespace = to_regnamespace(current_schema())`).Scan(&n); err != nil {
		return false, fmt.Errorf("read schema: %w", err)
	}
	return n == 1, nil
}

// BeginWrite begins a transaction at READ COMMITTED (beginWrite):
// PostgreSQL's writers run in parallel, and the Index locks what it
// writes (LockWrites).
func (SearchDialect) BeginWrite(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, beginWrite)
	return err
}

// SnapshotIsolation is REPEATABLE READ: the default, READ COMMITTED,
// gives each statement a newer snapshot, and a log trimmed between the
// read of its bounds and the read of its entries would lose entries the
// bounds said were there.
func (SearchDialect) SnapshotIsolation() sql.IsolationLevel { return sql.LevelRepeatableRead }

// ChangeLog reads a change log by writing transaction (column txid,
// migration 0023): writers run in parallel, so an entry numbered early
// may commit late. A snapshot holds the entries of the transactions it
// sees as committed: pg_current_snapshot() read as the first statement of
// a REPEATABLE READ transaction is that transaction's snapshot. The floor
// is kept by the trimmer (engram_log_trim).
func (SearchDialect) ChangeLog(table string) driver.ChangeLog {
	key := lockTextLogTrim
	if table == "search_vec_log" {
		key = lockVecLogTrim
	}
	return driver.ChangeLog{
		Position: "txid",
		Bounds: `SELECT pg_snapshot_xmin(s)::text::bigint AS xmin, pg_snapshot_xmax(s)::text::bigint AS xmax,
			COALESCE((SELECT json_agg(x::text::bigint ORDER BY x::text::bigint) FROM pg_snapshot_xip(s) AS x)::text, '[]') AS xip,
			COALESCE((SELECT next_txid FROM search_log_floor WHERE log = '` + table + `'), 0) AS floor
			FROM pg_current_snapshot() AS s`,
		Trim: fmt.Sprintf(`SELECT engram_log_trim('%[1]s', %[2]d, (SELECT COALESCE(max(seq), 0) FROM %[1]s) - ?)`, table, key),
	}
}

// JSONObject is json_build_object(pairs) as text.
func (SearchDialect) JSONObject(pairs string) string { return "json_build_object(" + pairs + ")::text" }

// False is FALSE.
func (SearchDialect) False() string { return "FALSE" }

// InOrderJoin is JOIN: PostgreSQL takes no join-order hint.
func (SearchDialect) InOrderJoin() string { return "JOIN" }

// IDList is the parameter's elements (jsonElements).
func (SearchDialect) IDList(n int) (from, id string) {
	return jsonElements(n) + " j(value)", "j.value::bigint"
}

// fewElements is the most elements of a list jsonElements words for the
// index.
const fewElements = 100

// jsonElements is a FROM item over the elements, as text, of the JSON
// array bound to its "?", for a list of n. The planner takes
// json_array_elements_text to return 100 rows, and hashes them with a scan
// of the table they are joined to wherever that looks cheaper than 100
// probes of its index: on a table of a few thousand rows, each read of a
// few rows by id read the whole table. unnest of an array it cannot see it
// takes to return 10, and probes the index, which is right for a few ids
// and up to about 2× slower than the hash for thousands; so a list of up
// to fewElements is unnested from an array, a longer one read as it is.
func jsonElements(n int) string {
	if n <= fewElements {
		return "unnest(ARRAY(SELECT json_array_elements_text(?::json)))"
	}
	return "json_array_elements_text(?::json)"
}

// MetadataCompare compares jsonb values: numbers numerically, strings as
// text.
func (SearchDialect) MetadataCompare(col string, path []string, op string, v any) (string, []any) {
	// jsonb orders values of different types (a string below every
	// number): the value's type must be the filter's for the comparison
	// to count, as on SQLite. The value is a finite number, a string or a
	// bool (searchindex.MetadataCondition checks), which json.Marshal takes.
	args := make([]any, 0, len(path)+2)
	for _, p := range path {
		args = append(args, p)
	}
	b, _ := json.Marshal(v)
	expr := "(" + col + "::jsonb #> ARRAY[" + strings.TrimSuffix(strings.Repeat("?, ", len(path)), ", ") + "]::text[])"
	return "(" + expr + " " + op + " ?::jsonb AND jsonb_typeof(" + expr + ") = jsonb_typeof(?::jsonb))",
		append(append(append(args, string(b)), args...), string(b))
}

// MetadataText reads the values as SQLite's json_tree atoms are read
// (booleans as 1 and 0), down to SQLite's JSON depth limit of 1,000: an
// unbounded walk of a value nested ~10,000 deep exhausts PostgreSQL's
// stack, and one such row would fail every load of the text cache. A
// string beginning with an ISO 8601 date is followed by that date's words
// (engram_iso_date_words, migration 0028), as the tsvector holds them.
func (SearchDialect) MetadataText(col string) string {
	return `(SELECT COALESCE(string_agg(CASE jsonb_typeof(v) WHEN 'boolean' THEN CASE WHEN v = 'true'::jsonb THEN '1' ELSE '0' END
				WHEN 'string' THEN v #>> '{}' || ' ' || engram_iso_date_words(v #>> '{}')
				ELSE v #>> '{}' END, ' '), '')
				FROM jsonb_path_query(` + col + `::jsonb, 'strict $.**{0 to 1000}') AS v
				WHERE jsonb_typeof(v) NOT IN ('object', 'array', 'null'))`
}

// ArchivalConversation is the conversation key archival_links groups
// an entry's neighbours by (driver.ArchivalConversationer).
func (SearchDialect) ArchivalConversation(alias string) string {
	return `engram_archival_conversation(` + alias + `.metadata_json)`
}

// MessageDate is a message's date as its tsvector holds it (migration
// 0028, engram_message_date): created_at as "8 May 2023", UTC; ” before
// 1970.
func (SearchDialect) MessageDate(col string) string {
	return `engram_message_date(` + col + `)`
}

// IndexedBlocks reads the blocks that have a tsvector: the lazy index
// logs each block it indexes, and runs before every search over blocks.
func (SearchDialect) IndexedBlocks() (query, key string) {
	return `SELECT b.id, b.owner, b.created_at, FALSE, b.label, b.description, b.rendered
			FROM (SELECT id, owner, created_at, label, description, rendered FROM blocks WHERE fts IS NOT NULL) b`, "b.id"
}

// MessageNeighbours joins a message's neighbours through engram_seq_step
// (migrations 0010 and 0033), NULL where seq +- 1 or 2 would overflow
// BIGINT: an error there would fail every load of the text cache.
func (SearchDialect) MessageNeighbours() string {
	return `LEFT JOIN messages p2 ON p2.agent = m.agent AND p2.batch_id = m.batch_id AND p2.seq = engram_seq_step(m.seq, -2)
		LEFT JOIN messages p ON p.agent = m.agent AND p.batch_id = m.batch_id AND p.seq = engram_seq_step(m.seq, -1)
		LEFT JOIN messages n ON n.agent = m.agent AND n.batch_id = m.batch_id AND n.seq = engram_seq_step(m.seq, 1)
		LEFT JOIN messages n2 ON n2.agent = m.agent AND n2.batch_id = m.batch_id AND n2.seq = engram_seq_step(m.seq, 2)`
}

// IndexBlocks computes the tsvector of each of the marked blocks ids
// (whose locks ex holds: no writer changes them meanwhile) and clears
// their marks; marks set meanwhile on other blocks stay. A rendering whose
// words take more than a tsvector holds is indexed by its beginning
// (engram_tsvector, migration 0030).
func (SearchDialect) IndexBlocks(ctx context.Context, ex driver.Execer, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	if _, err := ex.ExecContext(ctx, `UPDATE blocks SET fts =
			setweight(to_tsvector('english', label), 'A') ||
			setweight(to_tsvector('english', description), 'B') ||
			setweight(engram_tsvector(rendered, 1048575 - pg_column_size(to_tsvector('english', label) || to_tsvector('english', description))), 'C')
			WHERE id IN (SELECT d.id FROM fts_blocks_dirty d JOIN `+jsonElements(len(ids))+` j(value) ON d.id = j.value::bigint)`,
		string(list)); err != nil {
		return err
	}
	_, err = ex.ExecContext(ctx, `DELETE FROM fts_blocks_dirty WHERE id IN (SELECT j.value::bigint FROM `+jsonElements(len(ids))+` j(value))`, string(list))
	return err
}

// tsQueryText is the to_tsquery input for sanitised terms: each term
// quoted (terms hold only letters and digits), OR-ed.
func tsQueryText(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = "'" + strings.ReplaceAll(t, "'", "''") + "'"
	}
	return strings.Join(q, " | ")
}

// FullText ranks by ts_rank weighted by BM25's inverse document
// frequency (higher is better). ts_rank alone has no notion of how rare a
// term is, so each term's ts_rank (normalised by 1 + log length) is
// weighted by its IDF, counted over the rows the query matches, with the
// table's row estimate (at least the matches) as N. On Cranfield this
// beats plain ts_rank and ts_rank_cd (docs/performance.md).
//
// hits holds each matching row's tsvector detoasted once (the
// concatenation with an empty tsvector makes an in-memory copy): a stored
// tsvector is compressed or out of line, and the per-term counts and
// ranks below read it twice per query term, each read decompressing it
// again (the figures are in docs/performance.md, "Figures that were in
// code comments").
func (SearchDialect) FullText(p *driver.FullTextParams) (string, []any, bool) {
	stats, args := ftsStats(p)
	score := make([]string, len(p.Terms))
	for i := range p.Terms {
		score[i] = fmt.Sprintf("ln(1 + (df.n - df.d%[1]d + 0.5) / (df.d%[1]d + 0.5)) * ts_rank(hits.fts, tq.q%[1]d, 1)", i)
	}
	q := fmt.Sprintf(`%[1]s,
		top AS MATERIALIZED (
			SELECT hits.id AS id, (%[2]s) AS score FROM hits, tq, df
			ORDER BY score DESC, hits.id LIMIT %[3]d)
		SELECT %[4]s, top.score
		FROM top JOIN %[5]s %[6]s ON %[6]s.id = top.id
		ORDER BY top.score DESC, top.id`,
		stats, strings.Join(score, " + "), p.Limit, p.Columns, p.Table, p.Alias)
	return q, args, false
}

// ftsStats starts FullText's and FullTextMax's statements: tq, the
// query's tsqueries (q<i> for term i, qall for any); hits, the matching
// rows the leg keeps, their tsvectors copied in memory (see FullText);
// df, each term's hits (d<i>) and N (n): the table's row estimate, at
// least the hits.
func ftsStats(p *driver.FullTextParams) (string, []any) {
	var cols, dfs []string
	args := make([]any, 0, len(p.Terms)+1+len(p.Args))
	for i, t := range p.Terms {
		args = append(args, tsQueryText([]string{t}))
		cols = append(cols, fmt.Sprintf("to_tsquery('english', ?) AS q%d", i))
		dfs = append(dfs, fmt.Sprintf("count(*) FILTER (WHERE hits.fts @@ tq.q%d) AS d%d", i, i))
	}
	args = append(args, tsQueryText(p.Terms))
	args = append(args, p.Args...)
	where := p.Where
	if p.Owner != "" && p.Shared {
		// Where says the same with an EXISTS per row, which no index
		// answers: this form lets the planner OR the (owner, fts) index
		// (migration 0016) with the shared blocks' ids, so only the
		// agent's own and shared matches are read.
		where = fmt.Sprintf(`%[1]s AND (%[2]s.owner = ? OR %[2]s.id = ANY (ARRAY(SELECT block_id FROM shares WHERE agent = ?)))`, where, p.Alias)
		args = append(args, p.Owner, p.Owner)
	}
	q := fmt.Sprintf(`WITH tq AS (SELECT %[1]s, to_tsquery('english', ?) AS qall),
		hits AS MATERIALIZED (
			SELECT %[3]s.id AS id, (%[3]s.fts || ''::tsvector) AS fts FROM %[2]s %[3]s, tq
			WHERE %[3]s.fts @@ tq.qall AND %[4]s),
		df AS MATERIALIZED (SELECT %[5]s,
			greatest((SELECT reltuples FROM pg_class WHERE oid = '%[2]s'::regclass), count(*), 1) AS n
			FROM hits, tq)`,
		strings.Join(cols, ", "), p.Table, p.Alias, where, strings.Join(dfs, ", "))
	return q, args
}

// VectorTableExists: the vector tables are part of the schema.
func (SearchDialect) VectorTableExists(context.Context, driver.Execer, string) (bool, error) {
	return true, nil
}

// OpenVectors makes sure the vector extension is installed when it can
// be, and opens the tables with pgvector's column if it is.
func (SearchDialect) OpenVectors(ctx context.Context, db *sql.DB, p *driver.VectorParams) (driver.Vectors, error) {
	v := &vectors{db: db, dims: p.Dims, write: p.Write}
	ok, err := v.extension(ctx)
	if err != nil {
		return nil, err
	}
	v.pgv = ok
	return v, nil
}

// vecTables are the vector tables.
var vecTables = []string{"vec_blocks", "vec_archival", "vec_messages"}

// vectors are the vector tables, with pgvector's column when the server
// has the extension. When it has (or the dialect can create it), each
// vec_* table gains a column emb vector(dims) with an HNSW cosine index,
// and KNN runs in the server: no process keeps a copy of the vectors. The
// BYTEA column stays the source of truth (the vector cache, Reembed and
// exports read it); emb is written beside it by every writer once the
// column exists, so processes that search in process (the vector cache)
// and processes that use pgvector can share one database. Rows written by
// a process that opened before the column existed have emb NULL: the KNN
// fills those first (a partial index makes the check one index probe).
type vectors struct {
	db     *sql.DB
	dims   int
	write  func(ctx context.Context, fn func(ctx context.Context, ex driver.Execer) error) error
	pgv    bool   // the tables have emb, which every vector write fills, and KNN runs on it
	reason string // why pgvector is not in use
}

// Info: pgvector's HNSW index, or no KNN in the database (the vector
// cache is the only one).
func (v *vectors) Info() driver.VectorInfo {
	if v.pgv {
		return driver.VectorInfo{Engine: "pgvector"}
	}
	return driver.VectorInfo{Reason: v.reason}
}

// extension makes sure the vector extension is installed: true if it is
// (or was just created), false if this role may not create it or the
// server does not have it. Only errors reading the catalog fail.
func (v *vectors) extension(ctx context.Context) (bool, error) {
	installed := func() (bool, error) {
		var version string
		err := v.db.QueryRowContext(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&version)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("postgres: read extensions: %w", err)
		}
		// Filtered KNN needs iterative index scans (pgvector 0.8).
		var major, minor int
		if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil || major == 0 && minor < 8 {
			v.reason = fmt.Sprintf("pgvector %s is installed; engram needs 0.8 or later", version)
			return false, nil
		}
		return true, nil
	}
	if ok, err := installed(); ok || err != nil || v.reason != "" {
		return ok, err
	}
	if _, err := v.db.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
		// Not available or not allowed; another process creating it at the
		// same moment also lands here, so look again.
		if ok, err2 := installed(); ok || err2 != nil {
			return ok, err2
		}
		v.reason = err.Error()
		return false, nil
	}
	return true, nil
}

// Ready: without pgvector the tables are the schema's; with it, emb must
// have the dimensions.
func (v *vectors) Ready(ctx context.Context, q driver.Execer) (bool, error) {
	if !v.pgv {
		return true, nil
	}
	dims, err := columnDims(ctx, q)
	return dims == v.dims, err
}

// columnDims returns the dimensions of vec_blocks.emb, 0 when the column
// does not exist.
func columnDims(ctx context.Context, q driver.Execer) (int, error) {
	var typmod sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT atttypmod FROM pg_attribute
		WHERE attrelid = 'vec_blocks'::regclass AND attname = 'emb' AND NOT attisdropped`).Scan(&typmod)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: read vec_blocks columns: %w", err)
	}
	return int(typmod.Int64), nil
}

// Create adds pgvector's column when the extension is there (the tables
// themselves are the schema's, for any dimensions).
func (v *vectors) Create(ctx context.Context, ex driver.Execer) error {
	if !v.pgv {
		return nil
	}
	return v.createPGVector(ctx, ex)
}

// createPGVector adds (or retypes) the emb columns for the dimensions,
// fills them from the stored bytes and creates the HNSW indexes. It runs
// under the write lock.
func (v *vectors) createPGVector(ctx context.Context, ex driver.Execer) error {
	have, err := columnDims(ctx, ex)
	if err != nil {
		return err
	}
	for _, vec := range vecTables {
		var stmts []string
		switch {
		case have == 0:
			stmts = append(stmts, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN emb vector(%d)`, vec, v.dims))
		case have != v.dims:
			// Reembed to another dimension: the old values cannot be
			// cast, and are refilled below from the new bytes.
			stmts = append(stmts,
				fmt.Sprintf(`DROP INDEX IF EXISTS %s_emb`, vec),
				fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN emb TYPE vector(%d) USING NULL`, vec, v.dims))
		}
		// The owner index lets the planner answer a small agent's query
		// exactly from its own rows, and keep HNSW for large ones.
		stmts = append(stmts,
			fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %[1]s_emb_todo ON %[1]s (rowid) WHERE emb IS NULL`, vec),
			fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %[1]s_owner ON %[1]s (owner)`, vec))
		for _, s := range stmts {
			if _, err := ex.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("postgres: add pgvector column to %s: %w", vec, err)
			}
		}
		if err := v.fill(ctx, ex, vec); err != nil {
			return err
		}
		// After the fill: one bulk build instead of an insert per row.
		if _, err := ex.ExecContext(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %[1]s_emb ON %[1]s
			USING hnsw (emb vector_cosine_ops)`, vec)); err != nil {
			return fmt.Errorf("postgres: create pgvector index on %s: %w", vec, err)
		}
		// Statistics now, not at autovacuum's next round: without them
		// the planner guesses the owner filter keeps few rows and sorts
		// the whole table instead of walking the index.
		if _, err := ex.ExecContext(ctx, `ANALYZE `+vec); err != nil {
			return fmt.Errorf("postgres: analyze %s: %w", vec, err)
		}
	}
	return nil
}

// fill sets emb for vec's rows that lack it, from their stored bytes.
// Vectors of another dimension (left by an earlier embedder, about to be
// replaced by Reembed) stay NULL and so are not searched by pgvector; the
// byte-length condition keeps them from counting as work to do on every
// search.
func (v *vectors) fill(ctx context.Context, ex driver.Execer, vec string) error {
	sel := fmt.Sprintf(`SELECT rowid, embedding FROM %s WHERE emb IS NULL AND octet_length(embedding) = %d AND rowid > ?
		ORDER BY rowid LIMIT 500`, vec, 4*v.dims)
	// One statement per page of rows: [{"id": …, "e": "[…]"}, …].
	upd := fmt.Sprintf(`UPDATE %s v SET emb = u.e::vector FROM json_to_recordset(?::json) AS u(id bigint, e text)
		WHERE v.rowid = u.id`, vec)
	type fill struct {
		ID  int64  `json:"id"`
		Vec string `json:"e"`
	}
	after := int64(-1 << 63)
	for {
		rows, err := ex.QueryContext(ctx, sel, after)
		if err != nil {
			return fmt.Errorf("postgres: fill %s: %w", vec, err)
		}
		var todo []fill
		n := 0
		for rows.Next() {
			n++
			var id int64
			var blob []byte
			if err := rows.Scan(&id, &blob); err != nil {
				rows.Close()
				return fmt.Errorf("postgres: fill %s: %w", vec, err)
			}
			after = id
			if f, err := blobFloats(blob); err == nil && len(f) == v.dims {
				todo = append(todo, fill{id, vectorText(f)})
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("postgres: fill %s: %w", vec, err)
		}
		if n == 0 {
			return nil
		}
		if len(todo) == 0 {
			continue // only vectors of another dimension in this page
		}
		page, err := json.Marshal(todo)
		if err != nil {
			return fmt.Errorf("postgres: fill %s: %w", vec, err)
		}
		if _, err := ex.ExecContext(ctx, upd, string(page)); err != nil {
			return fmt.Errorf("postgres: fill %s rows %d..%d: %w", vec, todo[0].ID, todo[len(todo)-1].ID, err)
		}
	}
}

// blobFloats decodes a vector's little-endian float32 bytes.
func blobFloats(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("postgres: vector of %d bytes is not float32s", len(b))
	}
	f := make([]float32, len(b)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return f, nil
}

// vectorText is f in pgvector's text form. strconv's shortest 'g' format
// round-trips float32 exactly.
func vectorText(f []float32) string {
	var b strings.Builder
	b.Grow(len(f) * 10)
	b.WriteByte('[')
	for i, x := range f {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	b.WriteByte(']')
	return b.String()
}

// Insert is a multi-row INSERT (the same statement as SQLite's without
// pgvector), writing emb beside the bytes unless deferIndex.
func (v *vectors) Insert(table string, rows int, upsert, deferIndex bool) string {
	row := `(?, ?, ?)`
	cols := `rowid, owner, embedding`
	set := `owner = excluded.owner, embedding = excluded.embedding`
	if v.pgv && !deferIndex {
		row, cols = `(?, ?, ?, ?::vector)`, `rowid, owner, embedding, emb`
		set += `, emb = excluded.emb`
	}
	q := fmt.Sprintf(`INSERT INTO %s (%s) VALUES %s`, table, cols, strings.TrimSuffix(strings.Repeat(row+", ", rows), ", "))
	if upsert {
		q += ` ON CONFLICT (rowid) DO UPDATE SET ` + set
	}
	return q
}

// InsertArgs are the id, owner, bytes and (for emb) the text form, NULL
// for a vector of other dimensions.
func (v *vectors) InsertArgs(id int64, owner string, blob []byte, deferIndex bool) ([]any, error) {
	if !v.pgv || deferIndex {
		return []any{id, owner, blob}, nil
	}
	f, err := blobFloats(blob)
	if err != nil {
		return nil, err
	}
	var text any = vectorText(f)
	if len(f) != v.dims {
		text = nil
	}
	return []any{id, owner, blob, text}, nil
}

// errNoKNN: without pgvector the search index's vector cache is the only
// KNN, and the database is never asked for one.
var errNoKNN = errors.New("postgres: no KNN in the database without pgvector")

// KNN returns up to p.K nearest rows from the HNSW index. The scan is
// iterative in strict order, so a selective owner filter still yields
// p.K rows when the owner has them — unless it gives up past
// hnsw.max_scan_tuples: exhausted reports that a short answer holds every
// row there is (one indexed count says so), so only a scan that gave up
// needs the exact fallback.
func (v *vectors) KNN(ctx context.Context, p *driver.KNNParams) (hits []driver.VectorHit, exhausted bool, err error) {
	if !v.pgv {
		return nil, false, errNoKNN
	}
	tx, err := v.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = tx.Rollback() }()
	// One round trip: the scan settings for this transaction, and whether
	// any row still lacks emb.
	var todo bool
	err = tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT set_config('hnsw.ef_search', ?, true) IS NOT NULL
		AND set_config('hnsw.iterative_scan', 'strict_order', true) IS NOT NULL
		AND EXISTS (SELECT 1 FROM %s WHERE emb IS NULL AND octet_length(embedding) = %d)`, p.Table, 4*v.dims),
		strconv.Itoa(min(max(p.K, 40), 1000))).Scan(&todo)
	if err != nil {
		return nil, false, err
	}
	if todo {
		// Written by a process that opened before the column existed.
		if err := v.write(ctx, func(ctx context.Context, ex driver.Execer) error { return v.fill(ctx, ex, p.Table) }); err != nil {
			return nil, false, err
		}
	}
	where, wargs := "", []any{}
	if !p.All {
		where, wargs = ` WHERE owner = ?`, []any{p.Owner}
	}
	q := fmt.Sprintf(`SELECT rowid, emb <=> ?::vector AS d FROM %s%s ORDER BY emb <=> ?::vector LIMIT ?`, p.Table, where)
	qt := vectorText(p.Query)
	rows, err := tx.QueryContext(ctx, q, append(append([]any{qt}, wargs...), qt, p.K)...)
	if err != nil {
		return nil, false, err
	}
	scanned := 0
	for rows.Next() {
		scanned++
		var h driver.VectorHit
		var d sql.NullFloat64
		if err := rows.Scan(&h.ID, &d); err != nil {
			rows.Close()
			return nil, false, err
		}
		if d.Valid && !math.IsNaN(d.Float64) { // a zero vector has no distance (NaN)
			h.Distance = d.Float64
			hits = append(hits, h)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || scanned >= p.K {
		return hits, false, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+p.Table+where, wargs...).Scan(&n); err != nil {
		return nil, false, err
	}
	return hits, n <= scanned, nil
}

// Distance is "": distances are computed in process from the bytes.
func (v *vectors) Distance(string) string { return "" }

// BeginReplace empties the tables (kept: they are the schema's); with
// pgvector, rows go in as bytes with no HNSW index to maintain.
func (v *vectors) BeginReplace(ctx context.Context, ex driver.Execer) error {
	for _, vec := range vecTables {
		if _, err := ex.ExecContext(ctx, "DELETE FROM "+vec); err != nil {
			return fmt.Errorf("postgres: empty %s: %w", vec, err)
		}
	}
	if !v.pgv {
		return nil
	}
	for _, vec := range vecTables {
		if _, err := ex.ExecContext(ctx, fmt.Sprintf(`DROP INDEX IF EXISTS %s_emb`, vec)); err != nil {
			return fmt.Errorf("postgres: drop the pgvector index of %s: %w", vec, err)
		}
	}
	return nil
}

// EndReplace retypes emb for the dimensions, fills it from the bytes and
// builds the index and statistics once, over full tables.
func (v *vectors) EndReplace(ctx context.Context, ex driver.Execer) error {
	if !v.pgv {
		return nil
	}
	return v.createPGVector(ctx, ex)
}

// Staging: search_reembed is part of the schema.
func (v *vectors) Staging(context.Context) error { return nil }

// JSONBConversationKeys: engram_archival_conversation keys a value by
// jsonb's text of it (searchindex.JSONBKeyer).
func (SearchDialect) JSONBConversationKeys() bool { return true }
