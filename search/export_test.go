package search

// TextCacheAnswers reports how many full-text legs x's text cache ranked
// (not handed back to SQL), so tests can tell the cache did the work.
func TextCacheAnswers(x *Index) int64 { return x.textAnswers.Load() }

// SetBeforeFill makes fn run in every search of x between ranking and the
// page's row fetch (where a concurrent write can slip in).
func SetBeforeFill(x *Index, fn func()) { x.beforeFill = fn }
