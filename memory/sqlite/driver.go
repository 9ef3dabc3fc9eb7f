package sqlite

import "github.com/engram-go/engram/driver"

// The interfaces of package driver a SQLite Backend implements.
var (
	_ driver.Backend       = (*Backend)(nil)
	_ driver.TxStatements  = (*Backend)(nil)
	_ driver.DataVersioner = (*Backend)(nil)
)
