package search

// CacheStats is what a store's in-process search caches hold and have
// done since it opened (memory.Store.SearchCacheStats): for metrics
// (engram serve's /metrics), for telling whether searches run over the
// caches or in SQL, and for sizing memory.Options.TextCacheBytes and
// VectorCacheBytes. A cache is partial when the store's index outgrows
// its bound: it then holds the partitions (one per agent and content
// type) of the agents searched lately, and an agent's first search loads
// its own.
type CacheStats struct {
	TextLegs    int64 // full-text legs ranked by the text cache
	TextPages   int64 // result pages whose rows it supplied
	TextFilters int64 // vector legs whose filters it checked
	VectorLegs  int64 // vector searches the vector cache answered
	// Whether each cache is partial, the bytes it charges against its
	// bound, the bound (0: none), and the partitions a partial one holds.
	TextPartial, VectorPartial       bool
	TextBytes, VectorBytes           int64
	TextLimit, VectorLimit           int64
	TextPartitions, VectorPartitions int
	// Text partitions loaded from a part another process stored (a
	// decode) or from the rows (a read and analysis of them), and the
	// partitions each cache evicted to stay within its bound. Evictions
	// that keep pace with loads mean the bound holds fewer agents than
	// are searched.
	TextLoadsStored, TextLoadsRows int64
	TextEvictions, VectorEvictions int64
	// Passes that read a partial text cache's store-wide bm25
	// statistics (one per content type, again after a write its
	// catch-ups could not follow; on SQLite from FTS5's vocabulary, on
	// PostgreSQL the cache counts every row itself), and statistics
	// dropped by such writes: on PostgreSQL that content type's searches
	// then rank in SQL until the next pass, on SQLite the next search
	// counts its terms again.
	TextStatsPasses, TextStatsDrops int64
	// TextStatsDrift: with memory.Options.TextStatsDrift, the rows (over
	// all content types) whose changes the statistics follow only
	// approximately until the next pass.
	TextStatsDrift int64
	// Prewarming: memory.Options.Prewarm's loads are not done yet
	// (memory.Store.WaitPrewarm).
	Prewarming bool
}
