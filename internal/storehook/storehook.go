// Package storehook is how package memory hands internal/storeaccess what
// a memory.Store keeps from its users (the driver.Backend it persists to
// and the search.Index it maintains) without a method on the store's
// surface. Package memory sets the functions from its init function;
// nothing else sets them, and only internal/storeaccess calls them.
package storehook

import (
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/search"
)

// Backend and Index return a *memory.Store's backend and search index.
var (
	Backend func(store any) driver.Backend
	Index   func(store any) *search.Index
)
