package sqlitedriver

// busy is SQLite's primary result code for "database is locked".
const busy = 5

// IsBusy reports whether err is SQLite's "database is locked" (SQLITE_BUSY
// or one of its extended codes).
func IsBusy(err error) bool {
	c, ok := code(err)
	return ok && c&0xff == busy
}

// IsConflict reports a UNIQUE or PRIMARY KEY constraint violation.
func IsConflict(err error) bool {
	c, ok := code(err)
	return ok && (c == constraintUnique || c == constraintPrimaryKey)
}
