// Package postgres is engram's backend for many processes on many
// machines sharing one memory: a PostgreSQL database through
// github.com/jackc/pgx/v5 (database/sql over pgx, context-aware).
//
// What it guarantees is what the SQLite backend guarantees, by the same
// means: every write transaction takes one transaction-scoped advisory
// lock, so writes to a database are serialized (as SQLite serializes
// them on a file) and each write reads the current state inside its
// transaction before validating and applying (no lost update, limits
// hold across machines). Other processes learn of committed block changes
// through LISTEN/NOTIFY on the channel engram_blocks (a trigger notifies
// on every block row change), so a cache hit needs no query while the
// listening connection is up; when it drops, the store re-checks every
// cached block until it is back.
//
// Full text is a tsvector column per table (GIN index, english
// configuration) ranked by IDF-weighted ts_rank; block text is indexed
// lazily, when a search needs it. Vectors are float32 rows (the same bytes
// as SQLite's vector tables). When the server has pgvector 0.8+ (or the role may
// CREATE EXTENSION vector), each vector table also gets an emb vector(N)
// column with an HNSW cosine index and KNN runs in the server, filtered by
// owner with an iterative scan; otherwise the search package's vector
// cache searches in process, following a change log table. Index().
// VectorEngine says which ("pgvector" or "in-process") and
// VectorEngineReason why not pgvector. The schema is package migrations'
// migrations/postgres/*.sql, versioned in table engram_schema; a newer
// database is refused.
//
// Importing this package registers it with package memory (see
// memory.Register), so that memory.Open takes postgres:// and
// postgresql:// URLs and libpq keyword strings; a program that opens only
// SQLite leaves it out and does not link pgx:
//
//	import _ "github.com/engram-go/engram/memory/postgres"
//
// Passwords never appear in errors or logs (see Redact).
package postgres
