package analyzer

// stopwords are dropped from search's queries (MatchExpression) and from
// the offline embedder's word features. The list is NLTK's English list (the words with
// apostrophes split the way the unicode61 tokenizer splits them: "don't" is
// "don" + "t") plus a few query words ("also", "would", "could", "may",
// "might", "must", "shall", "upon", "within", "without", "whether", "etc").
// Kept short on purpose: words that carry meaning in technical text ("high",
// "low", "first", "new") are not stopwords.
var stopwords = func() map[string]struct{} {
	words := []string{
		"a", "about", "above", "after", "again", "against", "ain", "all", "am",
		"an", "and", "any", "are", "aren", "as", "at", "be", "because", "been",
		"before", "being", "below", "between", "both", "but", "by", "can",
		"couldn", "d", "did", "didn", "do", "does", "doesn", "doing", "don",
		"down", "during", "each", "few", "for", "from", "further", "had",
		"hadn", "has", "hasn", "have", "haven", "having", "he", "her", "here",
		"hers", "herself", "him", "himself", "his", "how", "i", "if", "in",
		"into", "is", "isn", "it", "its", "itself", "just", "ll", "m", "ma",
		"me", "mightn", "more", "most", "mustn", "my", "myself", "needn", "no",
		"nor", "not", "now", "o", "of", "off", "on", "once", "only", "or",
		"other", "our", "ours", "ourselves", "out", "over", "own", "re", "s",
		"same", "shan", "she", "should", "shouldn", "so", "some", "such", "t",
		"than", "that", "the", "their", "theirs", "them", "themselves", "then",
		"there", "these", "they", "this", "those", "through", "to", "too",
		"under", "until", "up", "ve", "very", "was", "wasn", "we", "were",
		"weren", "what", "when", "where", "which", "while", "who", "whom",
		"why", "will", "with", "won", "wouldn", "y", "you", "your", "yours",
		"yourself", "yourselves",
		// additions
		"also", "could", "etc", "may", "might", "must", "shall", "upon",
		"whether", "within", "without", "would",
	}
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}()

// IsStopword reports whether the lower-case word w is on the stopword list
// used by search's MatchExpression and offline embedder.
func IsStopword(w string) bool {
	_, ok := stopwords[w]
	return ok
}
