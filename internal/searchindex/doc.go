// Package searchindex is engram's search engine, for engram's own packages
// (memory, its backends, the driver conformance suite, the CLI's internals
// and the bench program): the Index that finds blocks, archival entries and
// messages in an engram database — full-text (SQLite FTS5, BM25), vector
// (exact KNN, cosine: in process over a cached copy, or in SQL with
// sqlite-vec), hybrid (reciprocal-rank fusion) and Auto — with its caches,
// loaders, fusion, reranking and snippets. A program that uses engram
// searches through package memory with the query API of package search
// (Options, Result, Scope, the embedders and rerankers); this package takes
// those types and returns search.Results, and wraps search's error values.
//
// # Tables
//
// Migration 0002_search.sql (package migrations) creates external-content
// FTS5 tables over the base tables, kept in step by triggers in the same
// transaction as every INSERT, UPDATE and DELETE:
//
//	fts_blocks    label, description, rendered   (contentless since migration 0021)
//	fts_archival  content, tags_text, metadata_values, context_before, context_after (contentless: metadata values, not keys; migration 0023)
//	fts_messages  content, context_before, context_after, date (contentless; migrations 0015, 0030)
//
// all with tokenize='porter unicode61 remove_diacritics 2'. Writers need no
// indexing code for full-text search. Block text is the exception to
// "same transaction" (migration 0003): a block is rewritten on every change,
// so its update trigger only marks it in fts_blocks_dirty, and every search
// over blocks first re-indexes the dirty ones in one write transaction
// (fts_blocks_indexed remembers what was indexed). Every
// search therefore still sees every persisted change.
//
// A message is indexed in its conversation: context_before and
// context_after hold the two messages before and the two after it in its
// batch (same agent and batch_id, seq - 2 and seq - 1, seq + 1 and
// seq + 2), so a turn is found by words its neighbours hold, at a lower
// weight than its own. The neighbours'
// words also count in its length (bm25 normalises by all columns), so a
// turn beside a long one scores lower for its own words than alone, and
// can rank below a short turn that only neighbours them
// (docs/retrieval.md). Results, content and snippets are the message's own. The triggers rewrite the
// entries of the messages up to two seqs from one when it arrives,
// changes or goes.
//
// An archival entry whose metadata names a conversation is indexed the
// same way: the first of "conversation", "conversation_id", "session",
// "session_id", "thread", "thread_id" holding a string other than "" or a
// number names it, values comparing as JSON values (3 and "3" are two
// conversations). The owner's entries of that conversation just before
// and after it in place order (an entry's id, or the place consolidation
// gave a merged entry: archival.conversation_pos) are its context_before
// and context_after (the view archival_links): live entries for a live
// entry, so a superseded entry is no live entry's context, and any entries
// for a superseded one. Entries naming none are the owner's stream, in
// the same order under the same live rule: the entry next to one there is
// its neighbour when their created_at differ by at least 1 second and at
// most 30 minutes (notes taken as a conversation goes; entries written
// less than a second apart, a batch or a document load, and entries
// further apart are scored alone), and the entry beyond a neighbour too
// close or too far is not looked at (docs/retrieval.md).
//
// driver.Vectors need the embedder's dimension, so on SQLite the dialect
// (memory/sqlite's SearchDialect) creates them at run time, when NewIndex
// first opens the database with an embedder: vec_blocks, vec_archival and vec_messages, plain tables whose rowid
// is the base row's id, with the owner (blocks.owner, archival.agent,
// messages.agent; indexed: the partition a KNN scans) and the embedding as
// D little-endian float32s (a CHECK holds its length to D). They replaced
// sqlite-vec's vec0 tables (converted on open), whose inserts cost three
// times a plain row's. Triggers delete a row's vector when the row is
// deleted or changes owner. Every vector change is also appended to
// search_vec_log (read by the vector cache; trimmed to the last
// 100,000 entries). The embedder's Name and Dimensions are recorded
// in table meta (MetaEmbedderName, MetaEmbedderDims); an Index whose
// embedder differs refuses vector work with search.ErrEmbedderMismatch until
// (*Index).Reembed has switched the database over. Writers add vectors with
// PutVectors (embed, then store) or PutEmbeddings (precomputed), through
// their own transaction.
//
// sqlite-vec comes with the SQLite driver: modernc.org/sqlite/vec (the
// pure-Go transpilation) by default, sqlite-vec's C source under the
// engram_cgo build tag; vectors are little-endian float32 BLOBs in both.
//
// Migration 0009 adds search_text_log: triggers log every change to what
// the FTS5 tables index (or to a column a search filters on) in the
// writer's transaction, for the text cache.
//
// A cache reads a log by snapshot, not by the order its entries were
// numbered in (driver.ChangeLog, driver.Dialect.ChangeLog): it remembers the snapshot
// it caught up to and next reads the entries that snapshot did not hold,
// so where writers run in parallel (PostgreSQL) an entry numbered early
// and committed late is read late, never skipped.
//
// # In-process caches
//
// By default an Index keeps a copy of the full-text index in memory (at
// most IndexOptions.TextCacheBytes, 64 MiB by default; of a larger store,
// the partitions of the agents searched lately, evicted least recently
// used and ranked with the store-wide statistics: FTS5's on SQLite, on
// PostgreSQL the cache's own, computed by a background pass over the
// indexed text): the
// terms FTS5 holds, produced by an analyzer that splits, folds and stems
// exactly as SQLite's tokenizer does (checked against SQLite on every code
// point, on 75,000 words and by a fuzz test), with each row's
// column-weighted term frequencies. Full-text legs then rank in process
// with FTS5's bm25 formula over the same statistics: the same rows in the
// same order as FTS5 (scores equal up to the rounding of log()), several
// times faster. The vector cache (IndexOptions.VectorCacheBytes: 256 MiB
// by default on SQLite, 4 bytes per dimension per row) does the same for
// vectors, loaded in the background too (SQL answers meanwhile;
// Index.WarmVectorCache waits for it). Both
// replay their change log at the start of each search, so they see every
// write committed before it, from any connection or process. The text
// cache is built in the background from the first search on; searches
// rank in SQL until it is ready (Index.WarmTextCache waits for it).
//
// Legs that can rank without rows (the text cache, every vector leg) return
// ids; the rows of the returned page only are fetched, in one query per
// content type that checks the filters again. A row deleted or changed
// between ranking and fetching drops out, and the search ranks again. The
// text cache holds archival and message rows whole (every change to them
// is logged; migration 0012 logs any update of a message), so their pages
// are filled from it, caught up again when the page is filled (so a row
// deleted or changed after ranking drops out as above), without reading
// the rows; block rows, whose rendering changes ahead of their lazy
// re-index, are always read from SQL. The rows count against
// TextCacheBytes: a whole copy that would outgrow it lets the rows go
// first (pages are then read from SQL) and only then goes partial.
//
// Snippets are made in process for the returned page only, over several
// goroutines for long pages; the Porter stems of the words they meet are
// remembered across queries (the first 32k words of three letters or
// more, a few MB). They split and fold words with the index's analyzer
// (its token characters, case folding and diacritic removal), so they
// highlight the words the index matched, accented or not.
//
// # Queries
//
// Any string is a valid query: search.MatchExpression turns it into an OR of
// quoted terms (letters and digits only, English stopwords dropped), so
// quotes, FTS5 operators and invalid UTF-8 never reach the FTS5 parser. A
// query without letters or digits fails with search.ErrInvalidQuery.
//
//	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(20)
//	results, err := x.Search(ctx, "deploy checklist", search.Scope{Agent: "ops-bot"}, opts)
//
// search.Options also filter by creation time (Since, Until), archival tags (Tags:
// any of; AllTags: all of), score (MinScore) and supersession
// (IncludeSuperseded; superseded archival entries are hidden by default).
//
// Ranking by mode:
//   - FTS: bm25 with column weights (blocks: label 5, description 2,
//     rendered 1; archival: content 1, tags 2, metadata 0.5; messages:
//     content 1, the message before 0.5, the message after 0.25).
//   - Vector: cosine distance; Score = 1 - distance.
//   - Hybrid: reciprocal-rank fusion (k = 60) of the FTS and vector lists,
//     each fetched max(4*limit, 50) deep.
//   - Auto: Hybrid when the Index has a matching embedder, else FTS.
//
// Several content types' full-text lists are fused by score, each row's
// score over the highest its own table's ranking could give the query,
// at least a quarter of the largest such among the types searched
// (Source.FTSNorm, 0 to 1): raw BM25 scores are not comparable across
// tables (each has its own statistics) and ranks are not either (the best
// block matching one word would tie with the best entry matching all).
// The scale comes from the text cache's statistics, or in SQL from the
// dialect (driver.FullTextScale); a dialect without it fuses by rank (RRF).
// Hybrid fuses that one full-text list with the vector lists merged by
// distance (one embedder's distances compare across types). An optional
// Reranker (IndexOptions.Reranker) then reorders the first RerankDepth
// results. Every search.Result says in Source where its Score came from.
// Snippets mark query terms with search.HighlightStart and HighlightEnd («like
// this»). docs/retrieval.md has the methods and their measurements.
//
// # Isolation
//
// Scope{Agent: a} sees a's own blocks, archival entries and messages plus
// the blocks shared with a (table shares); Scope{All: true} is the
// system-wide view. The restriction is part of every SQL statement: FTS
// queries filter on the owner column in the same SELECT; vector KNN runs
// inside the agent's partition (owner = ? in the KNN query itself),
// and shared blocks are ranked by exact distance through the shares table.
// With the vector cache the in-process scan likewise covers only
// the agent's partition, pgvector's HNSW scan has owner = ? in its WHERE
// (iterative, so the filter does not starve it), and every vector hit's row is fetched with the
// owner condition in SQL. No query ranks other agents' rows and filters
// afterwards.
//
// # Engines
//
// An Index runs on a driver.Dialect, which holds every piece of SQL that differs
// between engines and every schema statement the search legs need; the
// store's backends implement it (memory/sqlite's and memory/postgres's
// SearchDialect), so this package holds no engine branch and no DDL. The
// dialect's interfaces and types are package driver's, for engine authors;
// the caches that answer searches in process are internal to this package.
//
// On PostgreSQL the full-text leg is the text cache, as on SQLite (its
// change log is migration 0008 of memory/postgres), and in SQL — while
// the cache loads, or without it — a tsvector column per table ranked by
// IDF-weighted ts_rank; the vector leg is pgvector (HNSW, cosine) when the
// extension is installed or can be created, else the in-process vector
// cache. VectorEngine names the one in use; CacheStats counts the legs the
// caches answered.
//
// # Embedders
//
// The embedders are package search's: search.Embedder is the interface;
// search.NewOpenAI speaks the OpenAI /embeddings API (OpenAI, Ollama,
// llama.cpp, vLLM, ...) with batching, retries and Retry-After;
// search.NewOffline is a deterministic feature-hashing embedder for tests
// and air-gapped use. An Index embeds blocks with search.BlockText.
//
// # Performance
//
// Measured figures are in the repository's docs/performance.md. Exact KNN
// in SQL (sqlite-vec's vec_distance_cosine row by row) grows with the
// searching agent's partition, and so do vector and hybrid latency. With
// the vector cache (the default up to 256 MiB of vectors) the KNN runs
// in-process over a cached copy of the partition, and with the text cache
// full-text queries rank in process instead of through FTS5. Open the database with a
// large page cache and mmap (_pragma=cache_size, _pragma=mmap_size) for
// vector-heavy use.
//
// # Layout
//
// Package search holds the query API this package serves (and the
// embedders); package search must not import this one. The FTS5-compatible
// analyzer (tokenizer, fold, Porter stemmers, stopwords, query terms) is
// internal/analyzer, with the tests that hold it to SQLite; the vector
// arithmetic (BLOB encoding, the AVX2 inner product) is internal/vecmath.
// Retrieval-quality evaluation (the Cranfield collection, nDCG and the
// other metrics) is not part of this package's API: the quality tests and
// the bench program use the module's internal/eval.
package searchindex
