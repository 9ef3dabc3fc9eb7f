package sqlite

import "errors"

var (
	// ErrTooNew is returned by Open and Migrate for a database written by
	// a newer engram, whose schema this build does not know.
	ErrTooNew = errors.New("sqlite: database schema is newer than this engram")
	// ErrForeign is returned by Open and Migrate for a file carrying
	// another application's id, or, with no id, a user_version or tables
	// of its own that engram did not make.
	ErrForeign = errors.New("sqlite: database belongs to another application")
)

// The full-text statistics (SearchDialect.TextTotals, TextDocFreq,
// FullTextMax) were
// asked of a table that is not one of the FTS5 indexes, or FTS5's
// averages record did not decode.
var (
	errNotFTSIndex       = errors.New("not an engram FTS5 index")
	errTruncatedAverages = errors.New("FTS5 averages record truncated")
)
