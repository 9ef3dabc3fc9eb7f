package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/search"
)

// SearchDialect is the search engine's driver.Dialect for SQLite: full text in the
// FTS5 tables of migration 0002 (BM25), vectors in plain tables this
// dialect makes at run time for the embedder's dimensions, searched with
// sqlite-vec's vec_distance_cosine. The zero value is ready to use; it
// holds no state.
type SearchDialect struct{}

var _ driver.Dialect = SearchDialect{}

// SearchDialect returns the dialect the store's search index runs on.
func (b *Backend) SearchDialect() driver.Dialect { return SearchDialect{} }

// Name returns "sqlite".
func (SearchDialect) Name() string { return "sqlite" }

// TryLockTextPart reports true (searchindex.TextPartLocker): a SQLite
// write transaction holds the whole database, so a save of a stored text
// partition sees every write but its own, and none runs beside it.
func (SearchDialect) TryLockTextPart(context.Context, driver.Execer, int, string) (bool, error) {
	return true, nil
}

// PlansEachRun reports true (searchindex.PerRunPlanner): SQLite plans a
// prepared statement at each run, with the values it is given.
func (SearchDialect) PlansEachRun() bool { return true }

// SchemaVersionQuery reads the schema's migration version
// (searchindex.SchemaVersioner).
func (SearchDialect) SchemaVersionQuery() string { return `PRAGMA user_version` }

// CheckSchema requires the FTS5 tables (migration 0002_search.sql) and
// the owner numbers of their rowids (0019, 0021), and reports whether
// search_text_log (migration 0009) is there.
func (SearchDialect) CheckSchema(ctx context.Context, db *sql.DB) (bool, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
		WHERE type = 'table' AND name IN ('fts_blocks', 'fts_archival', 'fts_messages')`).Scan(&n); err != nil {
		return false, fmt.Errorf("read schema: %w", err)
	}
	if n != 3 {
		return false, fmt.Errorf("%w: FTS tables missing: apply migrations (0002_search.sql) first", search.ErrSchema)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
		WHERE type = 'table' AND name = 'fts_owners'`).Scan(&n); err != nil {
		return false, fmt.Errorf("read schema: %w", err)
	}
	if n != 1 {
		return false, fmt.Errorf("%w: fts_owners missing: apply migrations (0019_fts_owner_ranges.sql) first", search.ErrSchema)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
		WHERE type = 'trigger' AND name = 'fts_blocks_owner'`).Scan(&n); err != nil {
		return false, fmt.Errorf("read schema: %w", err)
	}
	if n != 1 {
		return false, fmt.Errorf("%w: fts_blocks is not keyed by owner: apply migrations (0021_fts_blocks_owner_ranges.sql) first", search.ErrSchema)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
		WHERE type = 'table' AND name = 'search_text_log'`).Scan(&n); err != nil {
		return false, fmt.Errorf("read schema: %w", err)
	}
	return n == 1, nil
}

// BeginWrite takes SQLite's write lock: BEGIN IMMEDIATE.
func (SearchDialect) BeginWrite(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	return err
}

// LockWrites does nothing: a SQLite write transaction holds the whole
// database.
func (SearchDialect) LockWrites(context.Context, driver.Execer, []driver.WriteLock) error { return nil }

// SnapshotIsolation is the default: a SQLite read transaction is one
// snapshot already.
func (SearchDialect) SnapshotIsolation() sql.IsolationLevel { return sql.LevelDefault }

// ChangeLog reads a change log by sequence number: SQLite's one writer
// commits the entries in the order they are numbered, so a snapshot holds
// every entry up to the log's last (xmin = xmax = last + 1, no running
// writer), and floor is the first entry still there. The min and max are
// separate subqueries: SQLite's O(1) min/max optimisation only applies to
// a lone min() or max().
func (SearchDialect) ChangeLog(table string) driver.ChangeLog {
	return driver.ChangeLog{
		Position: "seq",
		Bounds: `SELECT m AS xmin, m AS xmax, '[]' AS xip, f AS floor FROM (SELECT
			COALESCE((SELECT max(seq) FROM ` + table + `), 0) + 1 AS m, COALESCE((SELECT min(seq) FROM ` + table + `), 0) AS f)`,
		Trim: `DELETE FROM ` + table + ` WHERE seq <= (SELECT max(seq) FROM ` + table + `) - ?`,
	}
}

// JSONObject is json_object(pairs).
func (SearchDialect) JSONObject(pairs string) string { return "json_object(" + pairs + ")" }

// False is 0.
func (SearchDialect) False() string { return "0" }

// InOrderJoin is CROSS JOIN, which SQLite's planner never reorders.
func (SearchDialect) InOrderJoin() string { return "CROSS JOIN" }

// IDList is json_each over the parameter.
func (SearchDialect) IDList(int) (from, id string) { return "json_each(?) j", "j.value" }

// MetadataCompare compares json_extract's value (booleans are 1 and 0
// there) with v.
func (SearchDialect) MetadataCompare(col string, path []string, op string, v any) (string, []any) {
	quoted := make([]string, len(path))
	for i, p := range path {
		quoted[i] = `"` + p + `"`
	}
	// json_extract compares a number below every text and reads true as
	// 1: the value's JSON type must be the filter's for the comparison to
	// count, as on PostgreSQL.
	types := "'integer', 'real'"
	switch x := v.(type) {
	case string:
		types = "'text'"
	case bool:
		types = "'true', 'false'"
		v = 0
		if x {
			v = 1
		}
	}
	p := "$." + strings.Join(quoted, ".")
	return "(json_type(" + col + ", ?) IN (" + types + ") AND json_extract(" + col + ", ?) " + op + " ?)", []any{p, p, v}
}

// MetadataText is json_tree's atoms, as fts_archival_source (migration
// 0030) indexes them: a string beginning with an ISO 8601 date followed
// by that date's words (metadataAtom).
func (SearchDialect) MetadataText(col string) string {
	// No metadata (most rows) reads as '' without walking a JSON tree.
	return `(CASE WHEN ` + col + ` IS NULL OR ` + col + ` = '{}' THEN '' ELSE
		(SELECT COALESCE(group_concat(` + metadataAtom + `, ' '), '') FROM json_tree(` + col + `) WHERE atom IS NOT NULL) END)`
}

// metadataAtom is one json_tree atom's indexed text: its value, and for a
// string beginning YYYY-MM-DD (month 01 to 12) that date as "8 May 2023".
const metadataAtom = `CASE WHEN type = 'text' AND value GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]*'
            AND substr(value, 6, 2) BETWEEN '01' AND '12'
        THEN value || ' ' || CAST(substr(value, 9, 2) AS INTEGER) || ' ' ||
            CASE substr(value, 6, 2)
                WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March'
                WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June'
                WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September'
                WHEN '10' THEN 'October' WHEN '11' THEN 'November' ELSE 'December' END || ' ' ||
            substr(value, 1, 4)
        ELSE value END`

// IndexedBlocks reads the lazy index's copy of each block
// (fts_blocks_indexed, migration 0003), which is what FTS5 holds.
func (SearchDialect) IndexedBlocks() (query, key string) {
	return `SELECT i.id, b.owner, b.created_at, 0, i.label, i.description, i.rendered
			FROM fts_blocks_indexed i JOIN blocks b ON b.id = i.id`, "i.id"
}

// MessageNeighbours joins a message's neighbours as fts_messages_source
// (migration 0033) does: seq - 1 at the lowest seq would overflow into a
// REAL equal to the seq itself, and seq - 2 below it.
func (SearchDialect) MessageNeighbours() string {
	return `LEFT JOIN messages p2 ON p2.agent = m.agent AND p2.batch_id = m.batch_id AND p2.seq = m.seq - 2
			AND m.seq > -9223372036854775807
		LEFT JOIN messages p ON p.agent = m.agent AND p.batch_id = m.batch_id AND p.seq = m.seq - 1
			AND m.seq > -9223372036854775808
		LEFT JOIN messages n ON n.agent = m.agent AND n.batch_id = m.batch_id AND n.seq = m.seq + 1
			AND m.seq < 9223372036854775807
		LEFT JOIN messages n2 ON n2.agent = m.agent AND n2.batch_id = m.batch_id AND n2.seq = m.seq + 2
			AND m.seq < 9223372036854775806`
}

// ArchivalConversation is the conversation key archival_links groups
// an entry's neighbours by (driver.ArchivalConversationer).
func (SearchDialect) ArchivalConversation(alias string) string {
	return alias + `.conversation_key`
}

// MessageDate is a message's date as fts_messages_source (migration
// 0030) indexes it: created_at (Unix nanoseconds) as "8 May 2023", UTC;
// ” before 1970.
func (SearchDialect) MessageDate(col string) string {
	return `(CASE WHEN ` + col + ` >= 0 THEN
		CAST(strftime('%d', ` + col + ` / 1000000000, 'unixepoch') AS INTEGER) || ' ' ||
		CASE strftime('%m', ` + col + ` / 1000000000, 'unixepoch')
			WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March'
			WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June'
			WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September'
			WHEN '10' THEN 'October' WHEN '11' THEN 'November' ELSE 'December' END || ' ' ||
		strftime('%Y', ` + col + ` / 1000000000, 'unixepoch')
	ELSE '' END)`
}

// IndexBlocks replaces the FTS5 terms of each marked block (ids or not:
// the write transaction holds the database), and fts_blocks_indexed's
// copy of what the index holds (which the text cache reads).
func (SearchDialect) IndexBlocks(ctx context.Context, ex driver.Execer, _ []int64) error {
	for _, q := range []string{
		// The current owner names a block's rowid: a change of owner
		// moves the indexed row at once (trigger fts_blocks_owner).
		`DELETE FROM fts_blocks WHERE rowid IN (
			 SELECT (SELECT no FROM fts_owners o WHERE o.name = b.owner) * 1099511627776 + b.id
			 FROM blocks b JOIN fts_blocks_dirty d ON d.id = b.id)`,
		`INSERT INTO fts_blocks (rowid, label, description, rendered)
			 SELECT (SELECT no FROM fts_owners o WHERE o.name = b.owner) * 1099511627776 + b.id, b.label, b.description, b.rendered
			 FROM blocks b JOIN fts_blocks_dirty d ON d.id = b.id`,
		`INSERT OR REPLACE INTO fts_blocks_indexed (id, label, description, rendered)
			 SELECT b.id, b.label, b.description, b.rendered FROM blocks b JOIN fts_blocks_dirty d ON d.id = b.id`,
		`DELETE FROM fts_blocks_dirty`,
	} {
		if _, err := ex.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// ownerRanged are the FTS5 tables whose rowids are owner number * 2^40 +
// id (migrations 0019 and 0021), so that one owner's rows are one rowid
// range.
var ownerRanged = map[string]bool{"fts_blocks": true, "fts_archival": true, "fts_messages": true}

// maxSharerRanges is how many owners sharing blocks with an agent its
// blocks leg seeks one range each for; past it the shared blocks are
// found by one MATCH over the whole table (see FullText).
const maxSharerRanges = 8

// idBits is how many low bits of an owner-ranged rowid hold the row's id.
const idBits = 40

// FullText ranks with FTS5's bm25 (lower is better). The inner query
// ranks every match it visits and keeps the top rows; only those are
// joined to their full rows. With p.Owner on an owner-ranged table the
// MATCH is bounded to the owner's rowid range, which FTS5 seeks to: only
// the owner's matches are visited and ranked. With p.Shared a second
// MATCH visits the rowids of the blocks shared with the owner (each in
// its owner's range; one MATCH per owner sharing with the agent), and
// the two are ranked together. bm25's
// statistics (row count, average length, each term's document frequency)
// are the whole table's either way, so a row's score does not depend on
// the range.
func (SearchDialect) FullText(p *driver.FullTextParams) (string, []any, bool) {
	weights := make([]string, len(p.Weights))
	for i, w := range p.Weights {
		weights[i] = strconv.FormatFloat(w, 'f', -1, 64)
		if !strings.ContainsAny(weights[i], ".e") {
			weights[i] += ".0"
		}
	}
	bm25 := fmt.Sprintf("bm25(%s, %s)", p.Index, strings.Join(weights, ", "))
	var args []any
	var from string
	const mask = int64(1)<<idBits - 1
	switch {
	case ownerRanged[p.Index] && p.Owner != "":
		// An owner with no number has no rows: the range is then below
		// every rowid (owner numbers start at 1).
		no := fmt.Sprintf("COALESCE((SELECT no FROM fts_owners WHERE name = ?), -1) * %d", mask+1)
		from = fmt.Sprintf(`(SELECT (%[1]s.rowid & %[2]d) AS id, %[3]s AS score FROM %[1]s
				WHERE %[1]s MATCH ? AND %[1]s.rowid BETWEEN %[4]s AND %[4]s + %[2]d`, p.Index, mask, bm25, no)
		args = append(args, p.Match, p.Owner, p.Owner)
		if p.Shared {
			// The shared blocks, one MATCH per owner sharing with the
			// agent, over that owner's range, keeping the shared rowids.
			// Not one MATCH per shared rowid (FTS5 seeking to each of an
			// IN list): every MATCH starts bm25 again, which counts each
			// term's rows in the whole table. The unary + keeps the IN
			// list from FTS5 for that reason. A block shared with its own
			// owner is in the owner's range already.
			//
			// Each of those MATCHes costs bm25's whole-table counts, so
			// an agent that many owners share with (a supervisor every
			// agent shares a block with, or an agent others flood with
			// shares) would pay one store-wide count per sharer, far
			// more than one MATCH over the whole table. Past
			// maxSharerRanges owners the shared arm is that one MATCH,
			// keeping the shared rowids. Both arms rank with the same
			// table-wide statistics; the count is a constant term, which
			// SQLite tests before running either MATCH.
			shared := `FROM shares sh JOIN blocks sb ON sb.id = sh.block_id JOIN fts_owners o ON o.name = sb.owner
				WHERE sh.agent = ? AND sb.owner <> ?`
			sharers := fmt.Sprintf(`(SELECT count(*) FROM (SELECT DISTINCT sb.owner %s LIMIT %d))`, shared, maxSharerRanges+1)
			from += fmt.Sprintf(`
				UNION ALL
				SELECT (%[1]s.rowid & %[2]d), %[3]s
				FROM (SELECT DISTINCT o.no * %[4]d AS lo %[5]s AND %[6]s <= %[7]d) r CROSS JOIN %[1]s
				WHERE %[1]s MATCH ? AND %[1]s.rowid BETWEEN r.lo AND r.lo + %[2]d
					AND +%[1]s.rowid IN (SELECT o.no * %[4]d + sb.id %[5]s)
				UNION ALL
				SELECT (%[1]s.rowid & %[2]d), %[3]s
				FROM %[1]s
				WHERE %[1]s MATCH ? AND %[6]s > %[7]d
					AND +%[1]s.rowid IN (SELECT o.no * %[4]d + sb.id %[5]s)`, p.Index, mask, bm25, mask+1, shared, sharers, maxSharerRanges)
			args = append(args, p.Owner, p.Owner, p.Owner, p.Owner, p.Match, p.Owner, p.Owner,
				p.Match, p.Owner, p.Owner, p.Owner, p.Owner)
		}
		from += ") fts_hit"
	default:
		id := p.Index + ".rowid"
		if ownerRanged[p.Index] {
			id = fmt.Sprintf("(%s.rowid & %d)", p.Index, mask)
		}
		from = fmt.Sprintf(`(SELECT %[2]s AS id, %[3]s AS score FROM %[1]s WHERE %[1]s MATCH ?) fts_hit`, p.Index, id, bm25)
		args = append(args, p.Match)
	}
	q := fmt.Sprintf(`WITH top AS MATERIALIZED (
			SELECT fts_hit.id AS id, fts_hit.score AS score
			FROM %[1]s JOIN %[2]s %[3]s ON %[3]s.id = fts_hit.id
			WHERE %[4]s
			ORDER BY score, id LIMIT %[5]d)
		SELECT %[6]s, top.score
		FROM top CROSS JOIN %[2]s %[3]s ON %[3]s.id = top.id
		ORDER BY top.score, top.id`,
		from, p.Table, p.Alias, p.Where, p.Limit, p.Columns)
	return q, append(args, p.Args...), true
}

// VectorTableExists looks in sqlite_master: the vector tables are made
// with the first embedder.
func (SearchDialect) VectorTableExists(ctx context.Context, q driver.Execer, table string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// OpenVectors opens the plain vector tables for p.Dims.
func (SearchDialect) OpenVectors(ctx context.Context, db *sql.DB, p *driver.VectorParams) (driver.Vectors, error) {
	return &vectors{db: db, dims: p.Dims}, nil
}

// vecKinds are the vector tables: each one's content type (its number in
// search_vec_log), base table and owner column.
var vecKinds = []struct {
	t                search.ContentType
	vec, base, owner string
}{
	{search.Blocks, "vec_blocks", "blocks", "owner"},
	{search.Archival, "vec_archival", "archival", "agent"},
	{search.Messages, "vec_messages", "messages", "agent"},
}

// vectors are the vector tables of one embedder's dimensions.
//
// The tables are plain: (rowid, owner, embedding), indexed by owner, as on
// PostgreSQL, and KNN without the vector cache is an exact scan with
// sqlite-vec's vec_distance_cosine. They replaced sqlite-vec's vec0
// virtual tables, which answer the same exact scan faster but cost
// several times a plain row per inserted vector (the transpiled C walking
// chunk blobs) and per vector read back when the vector cache loads
// (figures in docs/design.md, "Vectors in plain tables"); vec0 also had
// no upsert and crashed when a statement was interrupted inside it.
// Searches run over the in-process vector cache by default
// (searchindex.IndexOptions.VectorCacheBytes), so the scan in SQL serves only
// databases past the cache bound or opted out of it.
type vectors struct {
	db   *sql.DB
	dims int
}

// Info: an exact scan, so the vector cache is kept by default.
func (v *vectors) Info() driver.VectorInfo {
	return driver.VectorInfo{Engine: "sqlite-vec", CacheByDefault: true}
}

// Ready reports whether the three plain tables exist; vec0 tables (made
// before the plain ones) count as missing, so that Create converts them.
func (v *vectors) Ready(ctx context.Context, q driver.Execer) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
		WHERE type = 'table' AND name IN ('vec_blocks', 'vec_archival', 'vec_messages')
		AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'`).Scan(&n); err != nil {
		return false, err
	}
	return n == 3, nil
}

// Create creates the vector tables for the dimensions, the vector-change
// log and the triggers that drop a vector with its row (or when the row
// changes owner, so a vector can never be found under its old owner's
// partition), converting vec0 tables a database made before.
func (v *vectors) Create(ctx context.Context, ex driver.Execer) error {
	if _, err := ex.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS search_vec_log (
		seq  INTEGER PRIMARY KEY AUTOINCREMENT,
		kind INTEGER NOT NULL, -- ContentType; 0 = everything changed (Reembed)
		id   INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("sqlite: create search_vec_log: %w", err)
	}
	for _, k := range vecKinds {
		if err := v.convertVec0(ctx, ex, k.vec); err != nil {
			return err
		}
		stmts := []string{
			vecTable(k.vec, v.dims),
			fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %[1]s_owner ON %[1]s (owner)`, k.vec),
			fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %[1]s_ad AFTER DELETE ON %[2]s BEGIN
				DELETE FROM %[1]s WHERE rowid = old.id;
				INSERT INTO search_vec_log (kind, id) VALUES (%[3]d, old.id);
			END`, k.vec, k.base, int(k.t)),
			fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS %[1]s_owner AFTER UPDATE OF %[4]s ON %[2]s
			WHEN old.%[4]s IS NOT new.%[4]s BEGIN
				DELETE FROM %[1]s WHERE rowid = old.id;
				INSERT INTO search_vec_log (kind, id) VALUES (%[3]d, old.id);
			END`, k.vec, k.base, int(k.t), k.owner),
		}
		for _, s := range stmts {
			if _, err := ex.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("sqlite: create %s: %w", k.vec, err)
			}
		}
	}
	return nil
}

// vecTable is the statement creating (if missing) the vector table name
// for dims. The CHECK holds every vector to the recorded embedder's size,
// as vec0's float[dims] column did; Reembed recreates the tables for new
// dimensions.
func vecTable(name string, dims int) string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		rowid     INTEGER PRIMARY KEY,
		owner     TEXT NOT NULL,
		embedding BLOB NOT NULL CHECK (length(embedding) = %d)
	)`, name, 4*dims)
}

// convertVec0 copies the vectors of a vec0 table (as databases made
// before the plain tables hold them) into a plain table of that name. It
// runs in Create's transaction, so a crash leaves either table.
func (v *vectors) convertVec0(ctx context.Context, ex driver.Execer, vec string) error {
	var virtual bool
	if err := ex.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master
		WHERE type = 'table' AND name = ? AND sql LIKE 'CREATE VIRTUAL TABLE%')`, vec).Scan(&virtual); err != nil {
		return fmt.Errorf("sqlite: read schema of %s: %w", vec, err)
	}
	if !virtual {
		return nil
	}
	tmp := vec + "_plain"
	stmts := []string{
		// The triggers name the table; they are made again for the new one.
		fmt.Sprintf(`DROP TRIGGER IF EXISTS %s_ad`, vec),
		fmt.Sprintf(`DROP TRIGGER IF EXISTS %s_owner`, vec),
		fmt.Sprintf(`DROP TABLE IF EXISTS %s`, tmp),
		vecTable(tmp, v.dims),
		// vec0 tables hold one size of vector (the recorded embedder's).
		fmt.Sprintf(`INSERT INTO %s (rowid, owner, embedding)
			SELECT rowid, owner, embedding FROM %s WHERE length(embedding) = %d`, tmp, vec, 4*v.dims),
		fmt.Sprintf(`DROP TABLE %s`, vec),
		fmt.Sprintf(`ALTER TABLE %s RENAME TO %s`, tmp, vec),
		// Every cached copy reloads: ids are the same, but say so.
		`INSERT INTO search_vec_log (kind, id) VALUES (0, 0)`,
	}
	for _, s := range stmts {
		if _, err := ex.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("sqlite: convert %s from vec0 to a plain table: %w", vec, err)
		}
	}
	return nil
}

// Insert is a multi-row INSERT, an upsert when asked (no index of its own
// to defer).
func (v *vectors) Insert(table string, rows int, upsert, _ bool) string {
	q := `INSERT INTO ` + table + ` (rowid, owner, embedding) VALUES ` + strings.TrimSuffix(strings.Repeat(`(?, ?, ?), `, rows), ", ")
	if upsert {
		q += ` ON CONFLICT (rowid) DO UPDATE SET owner = excluded.owner, embedding = excluded.embedding`
	}
	return q
}

// InsertArgs are the row's id, owner and bytes.
func (v *vectors) InsertArgs(id int64, owner string, blob []byte, _ bool) ([]any, error) {
	return []any{id, owner, blob}, nil
}

// KNN is an exact scan of the owner's rows, ties in id order. No "d IS
// NOT NULL": SQLite would compute every distance twice (half the scan's
// time), and no distance is NULL (that takes a zero vector, which package
// search refuses on the way in); one is skipped anyway. A short answer
// holds every row there is.
func (v *vectors) KNN(ctx context.Context, p *driver.KNNParams) ([]driver.VectorHit, bool, error) {
	owner := `WHERE owner = ?`
	args := []any{p.Blob, p.Owner, p.K}
	if p.All {
		owner, args = ``, []any{p.Blob, p.K}
	}
	rows, err := v.db.QueryContext(ctx, fmt.Sprintf(`SELECT rowid, vec_distance_cosine(embedding, ?) AS d FROM %s
		%s ORDER BY d, rowid LIMIT ?`, p.Table, owner), args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var hits []driver.VectorHit
	for rows.Next() {
		var h driver.VectorHit
		var d sql.NullFloat64
		if err := rows.Scan(&h.ID, &d); err != nil {
			return nil, false, err
		}
		if !d.Valid || math.IsNaN(d.Float64) {
			continue
		}
		h.Distance = d.Float64
		hits = append(hits, h)
	}
	return hits, true, rows.Err()
}

// Distance is sqlite-vec's vec_distance_cosine.
func (v *vectors) Distance(col string) string { return "vec_distance_cosine(" + col + ", ?)" }

// BeginReplace drops the tables and makes them for the dimensions.
func (v *vectors) BeginReplace(ctx context.Context, ex driver.Execer) error {
	for _, k := range vecKinds {
		if _, err := ex.ExecContext(ctx, "DROP TABLE IF EXISTS "+k.vec); err != nil {
			return fmt.Errorf("sqlite: drop %s: %w", k.vec, err)
		}
	}
	return v.Create(ctx, ex)
}

// EndReplace has nothing to build.
func (v *vectors) EndReplace(context.Context, driver.Execer) error { return nil }

// Staging creates search_reembed.
func (v *vectors) Staging(ctx context.Context) error {
	_, err := v.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS search_reembed (
		kind      INTEGER NOT NULL,
		id        INTEGER NOT NULL,
		hash      INTEGER NOT NULL,
		embedding BLOB    NOT NULL,
		PRIMARY KEY (kind, id)
	) WITHOUT ROWID`)
	return err
}

// ArchivalKeyTable reads an entry's conversation key from the index on
// (id, conversation_key) (migration 0034): the virtual column parses the
// metadata at every read of the row.
func (SearchDialect) ArchivalKeyTable(alias string) string {
	return `archival ` + alias + ` INDEXED BY archival_conversation_by_id`
}
