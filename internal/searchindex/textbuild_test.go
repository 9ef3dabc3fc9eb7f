package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// buildVocab is the words fillOwners writes.
var buildVocab = strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango nectar olive peach quince radish sage thyme`)

// fillOwners writes per archival entries for each agent, a third of them
// in conversations.
func fillOwners(t *testing.T, db *sql.DB, agents []string, per int) {
	t.Helper()
	inTx(t, db, func(tx execer) {
		n := 0
		for _, a := range agents {
			for i := range per {
				n++
				c := fmt.Sprintf("%s %s %s word%d", buildVocab[n%20], buildVocab[(n*7)%20], buildVocab[(n*3+i)%20], n%97)
				meta := `{}`
				if i%3 == 0 {
					meta = fmt.Sprintf(`{"conversation": "c%d"}`, i%5)
				}
				insertArchival(t, tx, archivalRow{Agent: a, Content: c, Metadata: meta})
			}
		}
	})
}

// openBuild opens an Index over db with a text cache of bound bytes that
// builds its whole copy owner by owner (bySel: with the store-wide
// query); it closes when the test ends.
func openBuild(t *testing.T, db *sql.DB, bound int64, bySel bool) *searchindex.Index {
	t.Helper()
	x, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: bound, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if bySel {
		searchindex.SetTextReadBySel(x)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// sameWhole holds x's and ref's whole results (snippets, metadata, scores)
// equal for every agent and query.
func sameWhole(t *testing.T, step string, ref, x *searchindex.Index, agents []string) {
	t.Helper()
	ctx := context.Background()
	compared := 0
	for _, a := range agents {
		for _, q := range append([]string{"apple fig", "word5", "mango olive thyme"}, buildVocab...) {
			opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)
			sc := search.Scope{Agent: a, All: a == ""}
			want, err := ref.Search(ctx, q, sc, opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.Search(ctx, q, sc, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameBits(want, got); err != nil {
				t.Fatalf("%s: %s %q: %v", step, a, q, err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%s: %s %q: results differ\nwant %+v\n got %+v", step, a, q, want, got)
			}
			compared += len(want)
		}
	}
	if compared == 0 {
		t.Fatalf("%s: nothing compared", step)
	}
}

// A whole build that reads owner by owner and finds a row no owner's
// query reads (an owner name made a blob) builds again with the
// store-wide query, from scratch: at bounds where the first try lets
// the bodies go, where the copy goes partial and where it fits, the
// outcome, the size and every result are those of a store-wide build.
func TestWholeBuildRetriedLikeStoreWide(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "ten whole builds of 2,100 entries compared result by result")
	ctx := context.Background()
	db := openDB(t)
	agents := []string{"a", "b", "c"}
	fillOwners(t, db, agents, 700)
	if _, err := db.ExecContext(ctx, `UPDATE archival SET agent = CAST(agent AS BLOB) WHERE id = 5`); err != nil {
		t.Fatal(err)
	}
	probe := openBuild(t, db, 1<<30, true)
	if err := probe.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	idx, all := searchindex.TextCacheIndexSize(probe), searchindex.TextCacheSize(probe)
	for _, bound := range []int64{idx + (all-idx)/8, idx + (all-idx)/2, all - 1, all + 1, idx - 1} {
		ref, x := openBuild(t, db, bound, true), openBuild(t, db, bound, false)
		e1, e2 := ref.WarmTextCache(ctx), x.WarmTextCache(ctx)
		if fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Fatalf("bound %d: warm %v, store-wide %v", bound, e2, e1)
		}
		if a, b := searchindex.TextCacheHoldsRows(ref), searchindex.TextCacheHoldsRows(x); a != b {
			t.Fatalf("bound %d: holds rows %v, store-wide %v", bound, b, a)
		}
		if a, b := searchindex.TextCacheLoaded(ref), searchindex.TextCacheLoaded(x); a != b {
			t.Fatalf("bound %d: loaded %v, store-wide %v", bound, b, a)
		}
		if a, b := searchindex.TextCacheSize(ref), searchindex.TextCacheSize(x); a != b {
			t.Fatalf("bound %d: size %d, store-wide %d", bound, b, a)
		}
		sameWhole(t, fmt.Sprint("bound ", bound), ref, x, append(agents, ""))
	}
}

// Another pool commits writes while a whole build reads owner by owner
// (between owners): the build reads one snapshot, and after catching up
// the copy ranks as one built store-wide afterwards.
func TestWholeBuildOneSnapshot(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "one goroutine; two whole builds of 600 entries compared result by result")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	agents := []string{"a", "b", "c"}
	fillOwners(t, db, agents, 200)
	other := openDBAt(t, path)
	x := openBuild(t, db, 1<<30, false)
	var n atomic.Int64
	searchindex.SetTextScanFault(x, func(id int64) error {
		switch n.Add(1) {
		case 150, 350, 550:
			for _, s := range []string{
				`UPDATE archival SET content = 'zebra ' || content WHERE agent = 'c' AND id % 4 = 0`,
				`DELETE FROM archival WHERE agent = 'a' AND id % 9 = 0`,
				`UPDATE archival SET valid_to = created_at + 1 WHERE agent = 'b' AND id % 5 = 0`,
			} {
				if _, err := other.ExecContext(ctx, s); err != nil {
					return err
				}
			}
			insertArchival(t, other, archivalRow{Agent: "b", Content: "zebra apple late"})
		}
		return nil
	})
	if err := x.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	searchindex.SetTextScanFault(x, nil)
	ref := openBuild(t, db, 1<<30, true)
	if err := ref.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	before := searchindex.TextCacheAnswers(x)
	sameWhole(t, "writes during the build", ref, x, append(agents, ""))
	if n.Load() < 550 || searchindex.TextCacheAnswers(x) == before {
		t.Fatalf("the build read %d rows and the copy answered %d searches: the writes did not land inside it", n.Load(), searchindex.TextCacheAnswers(x)-before)
	}
}
