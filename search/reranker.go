package search

import "context"

// Reranker rescores a search's best candidates against the query
// (memory.Options.Reranker): a cross-encoder or an LLM that reads each text
// beside the query judges relevance better than BM25 or a single vector
// can, at a cost per candidate, so it sees only the top of the fused list.
//
// A failure other than the search's context ending leaves the fused
// order: the search succeeds, the failure is logged (memory.Options.Logger),
// and searches skip the Reranker for memory.Options.RerankBackoff; with memory.Options.RerankStrict it fails the
// search with an error wrapping ErrReranker. A search whose
// context ends while the Reranker runs fails with the context's error.
type Reranker interface {
	// Rerank returns one relevance score per doc, in docs' order, higher
	// is better; the scores must be finite. docs are the candidates'
	// texts: an entry's or a message's content, a block's label and text.
	Rerank(ctx context.Context, query string, docs []string) ([]float64, error)
}
