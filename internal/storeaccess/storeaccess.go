// Package storeaccess gives engram's own programs and tests (cmd/engram,
// bench, internal/accesstoken, the engines' tests) what a memory.Store
// keeps from its users: the engine it persists to, for raw SQL on its
// pool; the search index it maintains, for cache warm-ups and the
// embedder in use; and its write path, clock and open check, for a
// package that keeps tables of its own in the store's database. What is
// read that way is not API: the schema (package migrations) changes
// between versions.
package storeaccess

import (
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storehook"
	"github.com/engram-go/engram/memory"
)

// Tables is what a package keeping tables of its own in a store's
// database gets of the store: its read pool, write transactions, clock
// and open check.
type Tables = storehook.Tables

// Backend returns the backend s persists to.
func Backend(s *memory.Store) driver.Backend { return storehook.Backend(s) }

// Index returns the search index s maintains.
func Index(s *memory.Store) *searchindex.Index { return storehook.Index(s) }

// TablesOf returns s's read pool, write transactions, clock and open
// check.
func TablesOf(s *memory.Store) Tables { return storehook.TablesOf(s) }
