package analyzer

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/testenv"
)

// analyzerSamples are words where tokenizers tend to differ: digits inside
// words, diacritics, combining marks, ligatures, case folding outside
// ASCII, scripts without case, private use, separators inside words.
var analyzerSamples = []string{
	"Café", "café", "naïve", "Ærøskøbing", "Straße", "İstanbul", "ΑΘΗΝΑ", "привет",
	"日本語テキスト", "cafe\u0301s", "e\u0301", "\u0301abc", "ﬁnance", "Ⅻ", "x²", "①②",
	"Ǆemal", "ŉ", "ǅ", "ĳ", "ꜳ", "Ångström", "ß", "ẞ", "ϴ", "Ω", "K", "\ue000pu",
	"a\u200bb", "l·l", "don't", "e-mail", "Łódź", "Ðað", "þorn", "ŀl", "25degrees",
	"alloys--75s-t6", "f40umerical", "caresses", "ponies", "relational", "hopefully",
	"generalizations", "oscillators", "agreed", "feed", "plastered", "bled", "motoring",
	"sing", "conflated", "troubled", "sized", "hopping", "tanned", "falling", "hissing",
	"fizzed", "failing", "filing", "happy", "sky", "triplicate", "formative", "formalize",
	"electriciti", "electrical", "hopeful", "goodness", "revival", "allowance", "inference",
	"airliner", "gyroscopic", "adjustable", "defensible", "irritant", "replacement",
	"adjustment", "dependent", "adoption", "homologou", "communism", "activate",
	"angulariti", "homologous", "effective", "bowdlerize", "probate", "rate", "cease",
	"controll", "roll", "logi", "bli", "abli", "sensibiliti", strings.Repeat("a", 63) + "ing",
	strings.Repeat("b", 64) + "ing", "x" + strings.Repeat("ation", 13), "\x00nul", "bad\xffutf8",
}

// TestAnalyzerMatchesFTS5 holds analyze to SQLite's own tokenizer: every
// word of the Cranfield collection (when present), of the Go standard
// library's sources in a few packages and of analyzerSamples is indexed by
// an FTS5 table with engram's tokenizer settings, and the terms FTS5 stored
// (fts5vocab 'instance') must be the terms analyze produces.
func TestAnalyzerMatchesFTS5(t *testing.T) {
	words := map[string]bool{}
	for _, w := range analyzerSamples {
		words[w] = true
	}
	goroot, _ := exec.Command("go", "env", "GOROOT").Output()
	for _, dir := range []string{"strings", "unicode", "net/http", "go/doc", "math/big"} {
		files, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(goroot)), "src", dir, "*.go"))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			for _, w := range strings.Fields(string(data)) {
				words[w] = true
			}
		}
	}
	dir := eval.FindCranfield()
	if dir == "" && testenv.CI() {
		t.Fatal("Cranfield collection not found: CI=true requires it (its words are most of this test's input)")
	}
	if dir != "" {
		c, err := eval.LoadCranfield(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range c.Docs {
			for _, w := range strings.Fields(d.Title + " " + d.Body) {
				words[w] = true
			}
		}
	}
	list := make([]string, 0, len(words))
	for w := range words {
		list = append(list, w)
	}
	slices.Sort(list)
	if underRace { // a sample: the race detector slows SQLite tenfold
		sample := list[:0]
		for i, w := range list {
			if i%10 == 0 || slices.Contains(analyzerSamples, w) {
				sample = append(sample, w)
			}
		}
		list = sample
	}
	if len(list) < 1000 {
		t.Fatalf("only %d words to compare", len(list))
	}

	ctx := context.Background()
	db, err := sql.Open(sqlitedriver.Name, "file:"+filepath.Join(t.TempDir(), "analyze.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE VIRTUAL TABLE f USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')`,
		`CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range list {
		if _, err := tx.ExecContext(ctx, `INSERT INTO f (rowid, x) VALUES (?, ?)`, i+1, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	fts := make([][]string, len(list))
	rows, err := db.QueryContext(ctx, `SELECT doc, term FROM v ORDER BY doc, offset`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var doc int
		var term string
		if err := rows.Scan(&doc, &term); err != nil {
			t.Fatal(err)
		}
		fts[doc-1] = append(fts[doc-1], term)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	bad := 0
	var buf []byte
	for i, w := range list {
		var mine []string
		buf = Analyze(w, buf, func(term []byte) { mine = append(mine, string(term)) })
		if !slices.Equal(mine, fts[i]) {
			if bad++; bad <= 20 {
				t.Errorf("%q: FTS5 indexes %q, analyze gives %q", w, fts[i], mine)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d words differ", bad, len(list))
	}
	t.Logf("%d words compared", len(list))
}

// FuzzAnalyzeMatchesFTS5 compares analyze with SQLite's tokenizer on
// arbitrary text.
func FuzzAnalyzeMatchesFTS5(f *testing.F) {
	for _, s := range analyzerSamples {
		f.Add(s)
	}
	f.Add("The Engines' 2nd run: 25degrees, naïve café — ﬁne?")
	ctx := context.Background()
	db, err := sql.Open(sqlitedriver.Name, "file:"+filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE VIRTUAL TABLE f USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')`,
		`CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		if _, err := db.ExecContext(ctx, `DELETE FROM f`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO f (rowid, x) VALUES (1, ?)`, text); err != nil {
			t.Skip(err) // not storable as TEXT (SQLite rejects nothing today)
		}
		rows, err := db.QueryContext(ctx, `SELECT term FROM v ORDER BY offset`)
		if err != nil {
			t.Fatal(err)
		}
		var fts []string
		for rows.Next() {
			var term string
			if err := rows.Scan(&term); err != nil {
				t.Fatal(err)
			}
			fts = append(fts, term)
		}
		rows.Close()
		var mine []string
		Analyze(text, nil, func(term []byte) { mine = append(mine, string(term)) })
		if !slices.Equal(mine, fts) {
			t.Fatalf("%q: FTS5 indexes %q, analyze gives %q", text, fts, mine)
		}
	})
}

// BenchmarkAnalyze tokenizes, folds and stems 100 Cranfield abstracts, as
// written (ASCII) and with accented vowels.
func BenchmarkAnalyze(b *testing.B) {
	dir := eval.FindCranfield()
	if dir == "" {
		testenv.Missing(b, "Cranfield collection not found (set ENGRAM_CRANFIELD or place it at ../shared/datasets/cranfield)")
	}
	c, err := eval.LoadCranfield(dir)
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, 100)
	for i, d := range c.Docs[:100] {
		texts[i] = d.Title + "\n" + d.Body
	}
	for _, set := range []struct {
		name  string
		texts []string
	}{{"ascii", texts}, {"accented", accentedTexts(texts)}} {
		b.Run(set.name, func(b *testing.B) {
			var buf []byte
			n := 0
			for b.Loop() {
				for _, t := range set.texts {
					buf = Analyze(t, buf, func([]byte) { n++ })
				}
			}
		})
	}
}

// accentedTexts returns texts with their vowels accented (as a
// tokenizer's non-ASCII workload; search's BenchmarkSnippet/accented uses
// the same).
func accentedTexts(texts []string) []string {
	r := strings.NewReplacer("a", "à", "e", "é", "o", "ö", "u", "ü", "E", "É", "I", "Î")
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = r.Replace(t)
	}
	return out
}

// FuzzAnalyzeJoinedBySpace holds what the text cache's partition loads
// rely on when they analyze a row's neighbours one by one rather than the
// context column that joins them: the terms of a, a space and b are the
// terms of a, then those of b, whatever bytes a and b hold.
func FuzzAnalyzeJoinedBySpace(f *testing.F) {
	for _, s := range analyzerSamples {
		f.Add(s, "bees")
	}
	f.Add("caf\xc3", "\xa9s")
	f.Add("e\u0301", "\u0301x")
	f.Add("tail \xf0", "\x80\x80 garden")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		terms := func(s string) []string {
			var out []string
			Analyze(s, nil, func(term []byte) { out = append(out, string(term)) })
			return out
		}
		got, want := terms(a+" "+b), append(terms(a), terms(b)...)
		if !slices.Equal(got, want) {
			t.Fatalf("Analyze(%q + \" \" + %q) = %q, want %q then %q", a, b, got, terms(a), terms(b))
		}
	})
}
