package search

import "time"

// Snippet markers: a Result's Snippet wraps each query term in
// HighlightStart and HighlightEnd and marks elided text with Ellipsis.
const (
	HighlightStart = "«"
	HighlightEnd   = "»"
	Ellipsis       = "…"
)

// RRFK is the reciprocal-rank-fusion constant: a result at rank r of a list
// contributes 1/(RRFK+r).
const RRFK = 60

// Scope says whose content a search may see.
type Scope struct {
	// All is the system-wide view (memory's SearchAll): every owner's rows.
	All bool
	// Agent, when All is false, is the agent searching: it sees the blocks,
	// archival entries and messages it owns, plus blocks shared with it.
	Agent string
}

// ScoreSource records where a result's Score came from. A rank of 0 means
// the result was not in that side's list.
type ScoreSource struct {
	// FTSRank is the 1-based rank in its content type's FTS list (in a
	// Hybrid search over several content types, in the one full-text list
	// they were merged into by FTSNorm: the rank Fused counts); BM25 is
	// FTS5's bm25() value there (negative; lower is better). For messages
	// and archival entries it is that value moved toward the best of the
	// result's session (its batch; the conversation its metadata names)
	// among the list's best (docs/retrieval.md, "A conversation's turns
	// are ranked together").
	FTSRank int     `json:"fts_rank,omitempty"`
	BM25    float64 `json:"bm25,omitempty"`
	// VectorRank is the 1-based rank in its content type's vector list
	// (in a Hybrid search whose full-text side was merged by FTSNorm, in
	// the one vector list merged by distance);
	// Distance is the cosine distance (0 = same direction, 2 = opposite).
	VectorRank int     `json:"vector_rank,omitempty"`
	Distance   float64 `json:"distance,omitempty"`
	// FTSNorm, when full-text lists of several content types were fused,
	// is the result's full-text score over the highest score its content
	// type's ranking could give the query, or over a quarter of the
	// largest such scale among the types searched where that is higher
	// (0 to 1): the scale on which an FTS search orders them
	// (docs/retrieval.md, "Fusion across content types"); 0 when no such
	// fusion happened.
	FTSNorm float64 `json:"fts_norm,omitempty"`
	// Fused is the reciprocal-rank-fusion score, sum of 1/(RRFK+rank) over
	// the lists the result is in; 0 when no fusion happened.
	Fused float64 `json:"fused,omitempty"`
	// VectorWeight is the weight the vector list had in a hybrid fusion
	// (Options.VectorWeight, or in Auto mode the embedder's FusionWeight).
	VectorWeight float64 `json:"vector_weight,omitempty"`
	// RerankRank is the 1-based rank the Reranker gave the result among
	// the candidates it scored (memory.Options.Reranker), Rerank its score;
	// RerankRank 0: not reranked.
	RerankRank int     `json:"rerank_rank,omitempty"`
	Rerank     float64 `json:"rerank,omitempty"`
}

// Result is one search hit.
//
// Score is higher-is-better and depends on how the result was ranked:
//   - FTS over one content type: -BM25;
//   - Vector: 1 - Distance (cosine similarity), across content types too;
//   - FTS over several content types: FTSNorm (or Fused, by rank, where
//     a full-text leg's scale is unknown);
//   - Hybrid: Fused;
//   - reranked (memory.Options.Reranker): the Reranker's score, for the
//     results it scored (Source.RerankRank > 0); the rest follow them in
//     the fused order with their fused Score.
//
// Source always says which.
type Result struct {
	Type  ContentType `json:"type"`
	ID    int64       `json:"id"`    // blocks.id, archival.id or messages.id
	Owner string      `json:"owner"` // the owning agent (a shared block's owner differs from the searcher)
	Label string      `json:"label,omitempty"`
	// Content is the full text: a block's rendered text, an entry's or a
	// message's content.
	Content string `json:"content"`
	// Snippet is the passage of Content (at most 16
	// tokens) with the most query terms, each between HighlightStart and
	// HighlightEnd, elisions marked with Ellipsis. When no query term occurs
	// in Content (a vector-only hit, or a block matched by its label), it is
	// the start of Content without markers.
	Snippet string   `json:"snippet"`
	Tags    []string `json:"tags,omitempty"` // archival entries only
	// Metadata is an archival entry's metadata object; for blocks
	// {"block_type","description"}; for messages {"role","name",
	// "batch_id","seq","tool_call_id"}. JSON numbers are float64.
	Metadata   map[string]any `json:"metadata,omitempty"`
	Created    time.Time      `json:"created"`
	Superseded bool           `json:"superseded,omitempty"` // archival entry replaced by a newer one
	Score      float64        `json:"score"`
	Source     ScoreSource    `json:"source"`
}
