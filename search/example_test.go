package search_test

import (
	"fmt"
	"time"

	"github.com/engram-go/engram/search"
)

func ExampleNewOptions() {
	opts := search.NewOptions().
		Mode(search.FTS).
		ContentTypes(search.Messages).
		Limit(20).
		Since(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)).
		Tags("project-x")
	s := opts.Settings()
	fmt.Println(s.Mode, s.Types, s.Limit, s.Since.Format(time.DateOnly), s.TagsAny)

	// nil options mean the defaults.
	var none *search.Options
	d := none.Settings()
	fmt.Println(d.Mode, d.Types, d.Limit, d.IncludeSuperseded)
	// Output:
	// fts messages 20 2025-01-01 [project-x]
	// auto blocks|archival|messages 10 false
}

func ExampleMatchExpression() {
	expr, err := search.MatchExpression(`What did "Alice" say about NEAR(deploy*, prod)?`)
	fmt.Println(expr, err)

	_, err = search.MatchExpression(`?!* ""`)
	fmt.Println(err)
	// Output:
	// "alice" OR "say" OR "near" OR "deploy" OR "prod" <nil>
	// search: invalid query: no words or numbers in "?!* \"\""
}
