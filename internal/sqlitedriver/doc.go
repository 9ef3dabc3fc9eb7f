// Package sqlitedriver is the one place that names the database/sql SQLite
// driver engram is built with, so every package (the SQLite backend, the
// search index, tests and the bench) opens the same engine.
//
// By default that is modernc.org/sqlite, SQLite transpiled to Go, with
// sqlite-vec registered from modernc.org/sqlite/vec. With the build tags
// engram_cgo and sqlite_fts5 it is github.com/mattn/go-sqlite3 (SQLite's C
// source, compiled with FTS5 by the second tag) with sqlite-vec's C source
// from github.com/asg017/sqlite-vec-go-bindings/cgo, registered as an
// automatic extension. Both accept the same DSN keys (_busy_timeout,
// _journal_mode, _synchronous, _foreign_keys, _txlock).
package sqlitedriver
