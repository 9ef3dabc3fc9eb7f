// Package search is the query API of engram's search: what a program says
// about a search and what it gets back. A store searches blocks, archival
// entries and messages — full-text (SQLite FTS5 or PostgreSQL tsvector,
// BM25), vector (exact KNN, cosine), hybrid (reciprocal-rank fusion) and
// Auto — through package memory (Agent.Search, Archival.Search and
// Store.SearchAll), which take this package's Options and
// return its Results:
//
//	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(20)
//	results, err := agent.Search(ctx, "deploy checklist", opts)
//
// # Options
//
// Options pick the Mode (Auto, FTS, Vector, Hybrid), the content types
// (Blocks, Archival, Messages), the Limit (DefaultLimit, at most MaxLimit),
// creation time (Since, Until), archival tags (Tags: any of; AllTags: all
// of), archival metadata (MetadataEquals, MetadataRange), score (MinScore),
// supersession (IncludeSuperseded; superseded archival entries are hidden
// by default) and the vector side's weight in hybrid fusion (VectorWeight).
// A nil *Options means the defaults; Settings is the resolved view.
//
// Ranking by mode:
//   - FTS: bm25 with column weights (blocks: label 5, description 2,
//     rendered 1; archival: content 1, tags 2, metadata 0.5; messages:
//     content 1, the message before 0.5, the message after 0.25).
//   - Vector: cosine distance; Score = 1 - distance.
//   - Hybrid: reciprocal-rank fusion (k = RRFK) of the FTS and vector lists.
//   - Auto: Hybrid when the store has an embedder whose vectors the
//     database holds, with the embedder's FusionWeight, else FTS.
//
// # Results
//
// Every Result says in Source (ScoreSource) where its Score came from: a
// BM25 rank, a vector distance, a fusion or a Reranker. Its Snippet marks
// query terms with HighlightStart and HighlightEnd («like this») and
// elisions with Ellipsis.
//
// # Queries
//
// Any string is a valid query: MatchExpression turns it into an OR of
// quoted terms (letters and digits only, English stopwords dropped, at
// most MaxQueryTerms), so quotes, FTS5 operators and invalid UTF-8 never
// reach the FTS5 parser. A query without letters or digits fails with
// ErrInvalidQuery. Terms gives a text's terms as the full-text index holds
// them; IsStopword says whether a word is dropped.
//
// # Embedders and rerankers
//
// Embedder is the interface (FusionWeighter optionally says how far Auto
// trusts it); NewOpenAI speaks the OpenAI /embeddings API (OpenAI, Ollama,
// llama.cpp, vLLM, ...) with batching, retries and Retry-After; NewOffline
// is a deterministic feature-hashing embedder for tests and air-gapped use.
// BlockText is the text a block is embedded as; CosineDistance and
// Normalize are the vector arithmetic the search uses. A Reranker
// (NewHTTPReranker for the Cohere/Jina-style /rerank API) reorders a
// search's best results; memory.Options sets the embedder and the reranker.
//
// # Errors
//
// Searches fail with errors that wrap this package's values (errors.Is):
// ErrInvalidQuery, ErrEmbedderMismatch, ErrEmbedder, ErrNoEmbedder,
// ErrReranker. Opening a store fails with ErrEmbedderMismatch for another
// embedder's vectors and ErrSchema for a database without the search
// tables.
//
// # The engine
//
// The engine that answers searches (the index over the engram tables, its
// in-process text and vector caches, fusion, reranking and snippets) is
// engram's internal package internal/searchindex, which package memory
// and the backends use; the repository's docs/retrieval.md describes its
// methods and measurements, docs/performance.md its costs.
package search
