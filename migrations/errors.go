package migrations

import "errors"

var (
	// ErrTooNew is returned when the database was written by a newer engram
	// whose schema this code does not know.
	ErrTooNew = errors.New("migrations: database schema is newer than this engram")
	// ErrForeign is returned when the file carries another application's id.
	ErrForeign = errors.New("migrations: database belongs to another application")
)
