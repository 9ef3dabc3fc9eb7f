//go:build engram_cgo

package sqlitedriver

import (
	"errors"

	vec "github.com/asg017/sqlite-vec-go-bindings/cgo"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// Name is the driver's database/sql name.
const Name = "sqlite3"

// Module is the driver's module, for reports.
const Module = "github.com/mattn/go-sqlite3"

func init() {
	// Registers sqlite-vec (vec0) with every connection the process opens
	// from now on: the cgo driver's equivalent of modernc.org/sqlite/vec.
	vec.Auto()
}

// code returns SQLite's extended result code carried by err, if any.
func code(err error) (int, bool) {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return int(se.ExtendedCode), true
	}
	return 0, false
}

var (
	constraintUnique     = int(sqlite3.ErrConstraintUnique)
	constraintPrimaryKey = int(sqlite3.ErrConstraintPrimaryKey)
)
