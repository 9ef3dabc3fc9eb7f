//go:build engram_cgo && !(sqlite_fts5 || fts5)

package sqlitedriver

// mattn/go-sqlite3 compiles FTS5 in only with its sqlite_fts5 tag, and
// engram's full-text search needs it: build with -tags engram_cgo,sqlite_fts5.
var _ = engram_cgo_needs_the_sqlite_fts5_build_tag
