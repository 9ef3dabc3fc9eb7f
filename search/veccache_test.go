package search_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/engram-go/engram/search"
)

// TestVectorCacheMatchesVec0: the cache's brute-force KNN returns what vec0
// returns, and it follows writes made through another connection pool (as
// another process would).
func TestVectorCacheMatchesVec0(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/c.db"
	db := openDBAt(t, path)
	emb := search.NewOffline(48)
	plain, err := search.NewIndex(ctx, db, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	cached, err := search.NewIndex(ctx, db, emb, &search.IndexOptions{VectorCache: true})
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}
	text := func(i int) string {
		return words[i%10] + " " + words[(i*7)%10] + " " + words[(i*3+1)%10] + " note " + itoa(int64(i))
	}
	for i := 0; i < 200; i++ {
		insertArchival(t, db, archivalRow{Agent: []string{"a", "b"}[i%2], Content: text(i)})
	}
	indexAll(t, ctx, db, plain)
	same := func(label string) {
		t.Helper()
		for _, q := range []string{"alpha bravo", "golf hotel india", "note 17", "juliet"} {
			for _, scope := range []search.Scope{{Agent: "a"}, {Agent: "b"}, {All: true}} {
				opts := search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(15)
				want, err := plain.Search(ctx, q, scope, opts)
				if err != nil {
					t.Fatal(err)
				}
				got, err := cached.Search(ctx, q, scope, opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s %q %+v: cache %d results, vec0 %d", label, q, scope, len(got), len(want))
				}
				for i := range got {
					// Equal distances may order differently; compare distances
					// and the id sets.
					if math.Abs(got[i].Source.Distance-want[i].Source.Distance) > 1e-5 {
						t.Fatalf("%s %q %+v rank %d: cache %v@%.6f, vec0 %v@%.6f", label, q, scope, i+1,
							got[i].ID, got[i].Source.Distance, want[i].ID, want[i].Source.Distance)
					}
				}
				// Sets agree except for ties at the cut-off distance.
				edge := want[len(want)-1].Source.Distance
				inner := func(rs []search.Result) []string {
					var out []string
					for _, r := range rs {
						if r.Source.Distance < edge-1e-5 {
							out = append(out, key(r))
						}
					}
					slices.Sort(out)
					return out
				}
				if g, w := inner(got), inner(want); !slices.Equal(g, w) {
					t.Fatalf("%s %q %+v: cache %v, vec0 %v", label, q, scope, g, w)
				}
			}
		}
	}
	same("initial")

	// Writes through another pool: new rows with vectors, deletes, an
	// owner change, a re-put with new text.
	other := openDBAt(t, path)
	writer, err := search.NewIndex(ctx, other, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 200; i < 230; i++ {
		id := insertArchival(t, other, archivalRow{Agent: "a", Content: text(i), Created: baseTime.Add(time.Minute)})
		if err := writer.PutVectors(ctx, other, search.Archival, []search.VectorItem{{ID: id, Owner: "a", Text: text(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.ExecContext(ctx, `DELETE FROM archival WHERE id % 5 = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, `UPDATE archival SET agent = 'b' WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	if err := writer.PutVectors(ctx, other, search.Archival, []search.VectorItem{{ID: 7, Owner: "a", Text: "juliet juliet juliet"}}); err != nil {
		t.Fatal(err)
	}
	same("after writes")
	// A vector stored under the wrong owner is still not returned to that
	// owner: the row fetch re-checks ownership (row 9 belongs to "a").
	if err := writer.PutVectors(ctx, other, search.Archival, []search.VectorItem{{ID: 9, Owner: "b", Text: "kilo lima"}}); err != nil {
		t.Fatal(err)
	}
	if rs, _ := cached.Search(ctx, "kilo lima", search.Scope{Agent: "b"}, search.NewOptions().Mode(search.Vector).Limit(200)); slices.ContainsFunc(rs, func(r search.Result) bool { return r.ID == 9 }) {
		t.Fatal("mis-owned vector leaked row 9 to b")
	}
	rs, err := cached.Search(ctx, "juliet juliet juliet", search.Scope{Agent: "a"},
		search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(1))
	if err != nil || len(rs) != 1 || rs[0].ID != 7 || rs[0].Source.Distance > 1e-5 {
		t.Fatalf("re-put vector: %+v, %v", rs, err)
	}
	// Reembed elsewhere (different dims): the cached index sees the
	// mismatch rather than serving stale vectors.
	re, _ := search.NewIndex(ctx, other, search.NewOffline(24), nil)
	if err := re.Reembed(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cached.Search(ctx, "alpha", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Vector)); err == nil {
		t.Fatal("cached index searched vectors of another embedder")
	}
}
