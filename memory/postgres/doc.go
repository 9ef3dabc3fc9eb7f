// Package postgres is engram's backend for many processes on many
// machines sharing one memory: a PostgreSQL database through
// github.com/jackc/pgx/v5 (database/sql over pgx, context-aware).
//
// What it guarantees is what the SQLite backend guarantees, but writers
// run in parallel: a write transaction takes transaction-scoped advisory
// locks (released at commit, so poolers in transaction mode keep working)
// on what it writes — a block, so that one block's writers take turns, an
// agent for what is the agent's as a whole (its archival entries and
// messages, its blocks generation), always in one order (locks.go) — and
// reads the current state inside its transaction before validating and
// applying (no lost update, limits and permissions hold across machines).
// Writes to different blocks, and archival and message writes of
// different agents, commit side by side. A block edit applied ahead of
// its lock (as a small append is) is one round trip when the block's
// lock is free: BEGIN, the locks (tried, never waited for), one statement
// that checks the row, stores the rendering and inserts the update, and
// COMMIT go together (Backend.WriteOnce); when a lock is busy or the row
// moved, the write takes the ordinary path and waits. The caches' change logs
// (search_text_log, search_vec_log) record each entry's transaction and
// are read by snapshot (driver.ChangeLog, migration 0023), so an entry
// committed late is read late, never skipped.
//
// Other processes learn of committed block changes through LISTEN/NOTIFY
// on the channel engram_blocks, so a cache hit needs no query while the
// listening connection is up; when it drops, the store re-checks every
// cached block until it is back. After each LISTEN the listener waits for
// a notification it sent through the pool: through a connection pooler in
// transaction mode none arrives, and the store keeps checking cached
// blocks by query (pooler.go). Such a pooler also needs the URL's
// default_query_exec_mode=exec (or another mode that names no
// statements) unless it carries prepared statements itself; the Backend
// then prepares none of its own. The store's block writes notify just
// after their commit (Backend.WriteBlocks: a transaction that notifies
// commits under a lock of the whole cluster), any other change of a block
// row (an UPDATE by hand) by trigger in its own transaction.
//
// Full text is a tsvector column per table (GIN index, english
// configuration) ranked by IDF-weighted ts_rank; block text is indexed
// lazily, when a search needs it. Vectors are float32 rows (the same bytes
// as SQLite's vector tables). When the server has pgvector 0.8+ (or the role may
// CREATE EXTENSION vector), each vector table also gets an emb vector(N)
// column with an HNSW cosine index and KNN runs in the server, filtered by
// owner with an iterative scan; otherwise the search engine's vector
// cache searches in process, following a change log table.
// memory.Stats.VectorEngine (Admin().Stats) says which ("pgvector" or
// "in-process") and VectorEngineReason why not pgvector. The schema is package migrations'
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
