package searchindex

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/search"
)

// tokenPart indexes texts as archival contents the way the text cache
// does (analyzeRow, textPart.add), bodies and token ids included.
func tokenPart(texts []string) *textPart {
	c := newTextCache(DefaultTextCacheBytes, nil, sql.LevelDefault, nil, nil)
	p := newTextPart(search.Archival, true)
	for i, text := range texts {
		rt, n := c.analyzeRow(search.Archival, []sql.NullString{{String: text, Valid: true}, {}, {}}, &c.scratch)
		p.add(textDoc{id: int64(i + 1), owner: "a", length: int32(n)}, textBody{content: text}, rt)
	}
	return p
}

// checkSnippetOfTokens holds the snippet made from a cached row's token
// ids to the one made by tokenizing its text, for each text and query.
func checkSnippetOfTokens(t *testing.T, texts, queries []string, sizes ...int) {
	t.Helper()
	p := tokenPart(texts)
	for _, q := range queries {
		terms := analyzer.QueryTerms(q)
		ids := p.termIDs(terms)
		for _, size := range sizes {
			for i, text := range texts {
				b := p.bodies[i]
				if b.toks == nil {
					if isASCII(text) {
						t.Fatalf("text %q: ASCII but no token ids", text)
					}
					continue
				}
				got := newSnippeter(terms, size, nil).snippetOfTokens(text, b.toks, ids)
				want := newSnippeter(terms, size, nil).snippet(text)
				if got != want {
					t.Fatalf("query %q, size %d, text %q:\nfrom ids   %q\ntokenized %q", q, size, text, got, want)
				}
			}
		}
	}
}

func TestSnippetOfTokens(t *testing.T) {
	long := strings.Repeat("The flutter of a wing at 1960s speeds; ", 30)
	texts := []string{
		"", "flutter", "Flutter.", "  flutter  ", "12345678", "abcdefgh flutter", "flutter abcdefg",
		"wings, wing, winged and WINGS", "the 1960s and 1960 and x15s", long, long + "flutter",
		"a b c d e f g h i j k l m n o p q r s t u v w x y z flutter",
		"café flutter", // not ASCII: tokenized
		strings.Repeat("x", 70) + " flutter " + strings.Repeat("y", 9),
	}
	queries := []string{"flutter", "wing speeds", "1960", "x15", "the", "nothing here", "flutter wings 1960s z a"}
	checkSnippetOfTokens(t, texts, queries, 1, 3, 16)
}

// TestSnippetOfTokensCranfield compares the two ways on every Cranfield
// abstract for the first 40 queries.
func TestSnippetOfTokensCranfield(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "every Cranfield abstract, one goroutine")
	c := cranfieldOrSkip(t)
	var texts, queries []string
	for _, d := range c.Docs {
		texts = append(texts, d.Title+"\n"+d.Body)
	}
	for _, q := range c.Queries[:40] {
		queries = append(queries, q.Text)
	}
	checkSnippetOfTokens(t, texts, queries, 16)
}

func FuzzSnippetOfTokens(f *testing.F) {
	f.Add("The flutter of 1960s wings, at Mach 2.", "wing flutter 1960", 5)
	f.Add("abcdefgh ijklmnop", "ijklmnop", 1)
	f.Fuzz(func(t *testing.T, text, query string, size int) {
		size = 1 + (size%32+32)%32
		ascii := strings.Map(func(r rune) rune {
			if r >= 0x80 || r == 0xFFFD {
				return ' '
			}
			return r
		}, text)
		checkSnippetOfTokens(t, []string{ascii, text}, []string{query}, size)
	})
}
