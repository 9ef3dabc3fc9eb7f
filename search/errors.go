package search

import "errors"

var (
	// ErrInvalidQuery is returned for a query with nothing searchable in it:
	// empty, blank, or only punctuation and symbols. It is also wrapped by
	// options that cannot be searched (an unknown mode or content type).
	ErrInvalidQuery = errors.New("search: invalid query")

	// ErrEmbedderMismatch is returned when the database's vectors were made by
	// a different embedder (name or dimensions) than the one in use. driver.Vectors
	// of different embedders are never mixed: run memory.Store.Reembed to switch
	// the database to the new embedder.
	ErrEmbedderMismatch = errors.New("search: embedder mismatch")

	// ErrEmbedder is wrapped by embedding failures: HTTP errors, error bodies,
	// malformed responses, wrong vector counts or dimensions.
	ErrEmbedder = errors.New("search: embedder failed")

	// ErrNoEmbedder is returned for vector work (Vector or Hybrid mode,
	// Reembed) on a store opened without an embedder.
	ErrNoEmbedder = errors.New("search: no embedder configured")

	// ErrReranker is wrapped by reranking failures (memory.Options.Reranker):
	// HTTP errors, error bodies, malformed or incomplete scores. A search
	// returns it only with memory.Options.RerankStrict.
	ErrReranker = errors.New("search: reranker failed")

	// ErrSchema is wrapped by memory.Open's error when the database lacks
	// the search tables of its backend's migrations.
	ErrSchema = errors.New("search: schema missing")
)
