// Package driver holds the interfaces an engram storage engine
// implements, as database/sql/driver does for database/sql: it is for
// engine authors, and a program that uses engram never imports it.
// memory/sqlite (built in) and memory/postgres (registered from its init
// function) implement it.
//
// An engine gives package memory a Backend (connections, the write
// transaction and its locks, read snapshots, migrations, error
// classification) and the search engine (internal/searchindex) a Dialect (the SQL that differs
// between engines, its full-text ranking and its vector storage,
// Vectors). Optional capabilities are interfaces of their own, found by
// type assertion: BlockNotifier, LockingWriter, OneTripWriter, TxStatements and
// DataVersioner on a Backend; TextStats, TextVocabulary and FullTextScale
// on a Dialect. A Backend other than the built-in
// SQLite reaches memory.Open through a Driver passed to memory.Register.
// The types these interfaces take and return (Execer, WriteLock,
// ChangeLog, FullTextParams, VectorParams, VectorInfo, KNNParams,
// VectorHit, OpenOptions) live here too.
//
// driver/drivertest is the conformance suite every engine runs from its
// tests. Package driver imports nothing of engram, so an engine depends
// on it without depending on the store.
package driver
