// Package storeaccess gives engram's own programs and tests (cmd/engram,
// bench, the engines' tests) what a memory.Store keeps from its users: the
// engine it persists to, for raw SQL on its pool, and the search index it
// maintains, for cache warm-ups and the embedder in use. What is read that
// way is not API: the schema (package migrations) changes between
// versions.
package storeaccess

import (
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/storehook"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// Backend returns the backend s persists to.
func Backend(s *memory.Store) driver.Backend { return storehook.Backend(s) }

// Index returns the search index s maintains.
func Index(s *memory.Store) *search.Index { return storehook.Index(s) }
