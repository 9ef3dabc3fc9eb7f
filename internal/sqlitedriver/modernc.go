//go:build !engram_cgo

package sqlitedriver

import (
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
	_ "modernc.org/sqlite/vec" // registers sqlite-vec (vec0) with modernc.org/sqlite
)

// Name is the driver's database/sql name.
const Name = "sqlite"

// Module is the driver's module, for reports.
const Module = "modernc.org/sqlite"

// code returns SQLite's extended result code carried by err, if any.
func code(err error) (int, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code(), true
	}
	return 0, false
}

const (
	constraintUnique     = sqlite3.SQLITE_CONSTRAINT_UNIQUE
	constraintPrimaryKey = sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
)
