package driver

import (
	"context"
	"database/sql"
)

// Dialect is what engram's search engine (its internal package
// searchindex, whose Index answers every search) needs from its SQL
// engine: the pieces of SQL that differ between engines, the engine's
// full-text ranking, and its vector storage (OpenVectors). The search
// engine writes every statement that both engines accept itself; a Dialect
// owns the rest, including every schema statement the search legs need at
// run time, so that the search engine holds no engine branch and no DDL. memory/sqlite (SearchDialect) and
// memory/postgres (SearchDialect) implement it; a store's backend hands
// its own to searchindex.NewIndex.
//
// Statements use "?" placeholders, as the backends' pools accept them.
type Dialect interface {
	// Name names the engine in messages ("sqlite", "postgres").
	Name() string

	// CheckSchema fails unless db holds the full-text schema of the
	// engine's migrations; textLog reports whether it holds the full-text
	// change log (search_text_log) the text cache needs.
	CheckSchema(ctx context.Context, db *sql.DB) (textLog bool, err error)
	// BeginWrite starts a write transaction on conn, for an Index without
	// searchindex.IndexOptions.Write (holding the engine's write lock where it has
	// one); the Index commits or rolls back with COMMIT or ROLLBACK on
	// conn.
	BeginWrite(ctx context.Context, conn *sql.Conn) error
	// LockWrites takes locks in the write transaction ex, where the
	// engine's writers run in parallel (see WriteLock); nothing where one
	// write transaction holds the whole database.
	LockWrites(ctx context.Context, ex Execer, locks []WriteLock) error
	// SnapshotIsolation is the isolation that makes a read transaction one
	// snapshot (the caches read their change log and the rows it names in
	// one).
	SnapshotIsolation() sql.IsolationLevel
	// ChangeLog is how the caches read the change log table
	// (search_text_log, search_vec_log): which entries a read snapshot
	// holds, and how the log is trimmed.
	ChangeLog(table string) ChangeLog

	// JSONObject is the SQL expression building a JSON object (as text)
	// from pairs, a list of alternating key literals and value
	// expressions: "'role', m.role, 'name', m.name".
	JSONObject(pairs string) string
	// False is the SQL literal of a false result column.
	False() string
	// InOrderJoin is the join keyword that keeps the written join order
	// (the first table drives) where the engine's planner takes a hint.
	InOrderJoin() string
	// IDList returns a FROM item over one "?" parameter holding a JSON
	// array of n integer ids, and the SQL expression of one id in it (an
	// engine may word it by n, for its planner's sake).
	IDList(n int) (from, id string)
	// MetadataCompare is the condition comparing the JSON value at path
	// (object keys, outermost first) in the JSON text column col with v
	// (a string, a number or a bool) by op ("=", ">=", "<="), numbers
	// numerically and strings as text, with its arguments; the path
	// travels as arguments, never inside the SQL text.
	MetadataCompare(col string, path []string, op string, v any) (string, []any)
	// MetadataText is the SQL expression of the scalar values in the JSON
	// text column col, space-separated, as the engine's full-text index of
	// archival metadata reads them (booleans as 1 and 0).
	MetadataText(col string) string

	// IndexedBlocks is the statement selecting every block as the
	// full-text index holds it: id, owner, created_at, superseded (false),
	// label, description, rendered; key is its id column, for a WHERE
	// that picks rows by id.
	IndexedBlocks() (query, key string)
	// MessageNeighbours joins to messages m the two messages before (p2:
	// seq - 2, p: seq - 1) and the two after (n: seq + 1, n2: seq + 2) it
	// in its batch, as the message full-text index reads them: LEFT
	// JOINs, no neighbour past either end of the seq range.
	MessageNeighbours() string
	// IndexBlocks re-indexes the blocks ids marked in fts_blocks_dirty
	// (the writers only mark them) and clears their marks, through ex
	// holding their locks (LockWrites); an engine whose write transaction
	// holds the whole database may do every marked block.
	IndexBlocks(ctx context.Context, ex Execer, ids []int64) error
	// FullText returns one full-text leg's query: p.Columns of the best
	// p.Limit matching rows of p.Table that pass p.Where, then their
	// score, best first. lowerIsBetter says how the score orders.
	FullText(p *FullTextParams) (query string, args []any, lowerIsBetter bool)

	// VectorTableExists reports whether the vector table exists (an
	// engine whose schema lacks it has it made by Vectors.Create).
	VectorTableExists(ctx context.Context, q Execer, table string) (bool, error)
	// OpenVectors opens the vector storage of db for an Index whose
	// embedder makes p.Dims-dimensional vectors; the Vectors read and
	// write through db. It may look at (and install) what the server
	// offers, but changes no table.
	OpenVectors(ctx context.Context, db *sql.DB, p *VectorParams) (Vectors, error)
}

// FullTextParams describe one full-text leg (Dialect.FullText).
type FullTextParams struct {
	Table string // base table ("archival")
	Alias string // its alias in Columns and Where ("a")
	// Index is the engine's full-text table of Table, on engines that keep
	// one apart ("fts_archival"); Weights are its column weights, in
	// index column order.
	Index   string
	Weights []float64
	// Match is the query as an FTS5 MATCH expression (search.MatchExpression);
	// Terms are its terms (letter and digit runs).
	Match string
	Terms []string
	// Columns is the select list of a result, over Alias.
	Columns string
	// Where (over Alias) and its arguments, which follow the query's own.
	Where string
	Args  []any
	Limit int
	// Owner, when set, is the one owner whose rows the leg may return
	// (Where says so too): an engine that can reach one owner's rows
	// before it ranks uses it, so that a search costs what that owner's
	// rows cost. It is "" for search.Scope.All.
	Owner string
	// Shared: the leg may also return the rows shared with Owner (blocks
	// whose table shares names Owner; Where says so too), which an engine
	// reaching Owner's rows first must reach as well.
	Shared bool
}

// VectorParams describe the vector storage an Index opens
// (Dialect.OpenVectors).
type VectorParams struct {
	// Dims is the embedder's dimensions.
	Dims int
	// Write runs fn under the Index's write lock (searchindex.IndexOptions.Write or
	// Dialect.BeginWrite).
	Write func(ctx context.Context, fn func(ctx context.Context, ex Execer) error) error
}

// Vectors is an engine's vector storage for one embedder's dimensions:
// tables (rowid, owner, embedding) named vec_blocks, vec_archival and
// vec_messages, with the vector as little-endian float32 bytes.
type Vectors interface {
	// Info says what answers KNN in the database.
	Info() VectorInfo
	// Ready reports whether the tables are set up for the dimensions
	// (false: Create must run).
	Ready(ctx context.Context, q Execer) (bool, error)
	// Create makes (or converts) the tables, their indexes and the
	// triggers that drop a vector with its row, under the write lock.
	Create(ctx context.Context, ex Execer) error
	// Insert is the statement storing rows vectors in table (InsertArgs of
	// each row, in order); with upsert a row's earlier vector is
	// replaced. With deferIndex the engine's own index of the vectors is
	// left for EndReplace to fill.
	Insert(table string, rows int, upsert, deferIndex bool) string
	// InsertArgs are one row's arguments of Insert.
	InsertArgs(id int64, owner string, blob []byte, deferIndex bool) ([]any, error)
	// KNN returns up to p.K rows of p.Table nearest to p.Query, nearest
	// first, ties in id order. exhausted reports that a short answer holds
	// every row there is.
	KNN(ctx context.Context, p *KNNParams) (hits []VectorHit, exhausted bool, err error)
	// Distance is the SQL expression of the cosine distance between the
	// vector column col and a "?" parameter holding a query's bytes, NULL
	// for a zero vector; "" when the engine has none, and distances are
	// computed in process from the stored bytes.
	Distance(col string) string
	// BeginReplace empties the tables for Index.Reembed (making them for the
	// dimensions where they depend on them), under the write lock;
	// EndReplace, after the rows went in with Insert's deferIndex, builds
	// what Create builds.
	BeginReplace(ctx context.Context, ex Execer) error
	EndReplace(ctx context.Context, ex Execer) error
	// Staging makes sure Reembed's staging table search_reembed exists.
	Staging(ctx context.Context) error
}

// VectorInfo is what answers KNN in a database.
type VectorInfo struct {
	// Engine names the database's KNN: "sqlite-vec" (an exact scan) or
	// "pgvector" (an HNSW index); "" when the database has none, and the
	// vector cache is the only KNN.
	Engine string
	// Reason says why the engine's indexed KNN is not in use ("" when it
	// is, or the engine has none).
	Reason string
	// CacheByDefault: the database's KNN is an exact scan, so an Index
	// keeps the vector cache by default (searchindex.IndexOptions.VectorCacheBytes).
	CacheByDefault bool
}

// KNNParams describe one KNN in the database (Vectors.KNN).
type KNNParams struct {
	Table string    // vector table ("vec_blocks")
	Query []float32 // the query vector
	Blob  []byte    // Query's bytes
	Owner string    // the partition searched, unless All
	All   bool
	K     int
}

// VectorHit is one KNN neighbour.
type VectorHit struct {
	ID       int64
	Distance float64
}
