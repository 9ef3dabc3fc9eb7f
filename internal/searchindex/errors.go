package searchindex

import "errors"

// ErrCacheBudget is wrapped by WarmTextCache and WarmVectorCache when a
// cache would exceed its bound (IndexOptions.TextCacheBytes,
// VectorCacheBytes): searches work, ranked in SQL (or, for a partial text
// cache, over the partitions it holds). No search returns it.
var ErrCacheBudget = errors.New("search: cache over its memory budget")
