// Package sqlite is engram's embedded backend: one SQLite file (or
// ":memory:") with FTS5 and sqlite-vec built in, through
// modernc.org/sqlite (pure Go) by default or mattn/go-sqlite3 (C) under
// the build tags engram_cgo,sqlite_fts5 (see internal/sqlitedriver). Writes take BEGIN IMMEDIATE on a single
// writer connection and poll for another process's lock with short,
// jittered sleeps, so several processes share one file fairly; reads use a
// small pool in WAL mode. The WAL is copied back into the file in the
// background, not in the commit that fills it (see checkpoint.go), so a
// small write does not pay for another writer's pages. The schema is
// package migrations.
//
// memory.Open picks this backend for a file path, ":memory:" or
// sqlite://PATH; use Open and memory.New to build a store over a backend
// you configured yourself.
package sqlite
