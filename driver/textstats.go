package driver

import "context"

// TextStats is implemented by a Dialect whose full-text ranking is
// FTS5's bm25 and that can read the store-wide statistics bm25 ranks
// with. A text cache over a store larger than searchindex.IndexOptions.TextCacheBytes
// holds only some owners' rows (a partial cache) and ranks them with
// these statistics, as the engine would rank them; without it the cache
// computes the statistics itself (a statistics pass over every row), as a
// whole copy would count them. memory/sqlite's SearchDialect implements
// it.
type TextStats interface {
	// TextTotals returns the rows of the full-text table index and the
	// tokens they hold over all its columns, as bm25 reads them.
	TextTotals(ctx context.Context, q Execer, index string) (rows, tokens int64, err error)
	// TextDocFreq returns how many rows of index hold term: one query
	// term (a letter and digit run), read as the engine reads it quoted
	// as a phrase.
	TextDocFreq(ctx context.Context, q Execer, index, term string) (int64, error)
}

// TextVocabulary is implemented by a TextStats dialect that can list a
// full-text index's whole vocabulary with each term's document frequency
// in one read (SQLite: FTS5's fts5vocab). A partial text cache then
// reads a content type's complete statistics once, in the background
// (a statistics pass, as without TextStats but reading the index's
// counts instead of analyzing every row), and ranks every query term
// from them: an agent's first search reads no store-wide count. Until a
// type's pass is done, and while a write its catch-ups cannot follow has
// dropped them, its query terms' counts are read one by one
// (TextDocFreq), as without it; the counts are the same either way.
type TextVocabulary interface {
	// TextVocabulary calls fn with each term of index (as the engine
	// analyzed it) and the rows that hold it.
	TextVocabulary(ctx context.Context, q Execer, index string, fn func(term string, rows int64) error) error
}

// FullTextScale is an optional capability of a Dialect: the scale of its
// FullText scores, so that searchindex.Index.Search can fuse the full-text legs of several
// content types by score (search.ScoreSource.FTSNorm) when they ranked in SQL. A
// Dialect without it has those legs fused by rank (RRF), as before.
type FullTextScale interface {
	// FullTextMax returns the highest score FullText(p) could give a row
	// of p.Table for p.Terms, as a positive number on FullText's own
	// scale (its magnitude where lowerIsBetter): what a row holding every
	// term, with frequencies growing without bound, would score under the
	// statistics the leg ranks with. p has no Columns or Limit; Where and
	// Args are the leg's, for engines whose statistics count only the
	// rows it keeps.
	FullTextMax(ctx context.Context, q Execer, p *FullTextParams) (float64, error)
}

// MessageDater is a Dialect whose full-text index holds each message's
// date as a fourth column (SQLite migration 0030, PostgreSQL 0027: "8
// May 2023", from created_at, UTC), weighted 0.5 as archival metadata
// values are: a question naming the day, month or year something was
// said finds the messages of that day. MessageDate is the SQL expression
// of that text for the created_at column col.
type MessageDater interface {
	MessageDate(col string) string
}

// ArchivalConversationer is a Dialect that names the conversation key an
// archival entry's neighbours are grouped by (SQLite migration 0028,
// PostgreSQL 0025): ArchivalConversation is its SQL expression for the
// archival table aliased alias, NULL for an entry naming no
// conversation. The neighbours archival_links gives are then those of
// the same owner and key next in the order (COALESCE(conversation_pos,
// id), id), live ones around a live entry, so one read of an owner's
// entries ordered by the engine by (key, COALESCE(conversation_pos, id),
// id) finds every entry's neighbours (the engine compares places as the
// view does, whatever type a hand edit left one).
type ArchivalConversationer interface {
	ArchivalConversation(alias string) string
}
