package searchindex_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strconv"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// TestVec0TablesConvert: a database whose vectors are in sqlite-vec vec0
// tables (as engram made them before its plain vector tables) opens with
// every vector kept, the same neighbours in the same order, and the
// clean-up triggers working on the converted tables.
func TestVec0TablesConvert(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/old.db"
	db := openDBAt(t, path)
	emb := search.NewOffline(48)

	// The schema NewIndex used to create.
	stmts := []string{
		`INSERT INTO meta (key, value) VALUES ('` + searchindex.MetaEmbedderName + `', '` + emb.Name() + `'), ('` + searchindex.MetaEmbedderDims + `', '48')`,
		`CREATE TABLE search_vec_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind INTEGER NOT NULL, id INTEGER NOT NULL)`,
	}
	for _, k := range []struct{ vec, base, owner string }{
		{"vec_blocks", "blocks", "owner"}, {"vec_archival", "archival", "agent"}, {"vec_messages", "messages", "agent"},
	} {
		stmts = append(stmts,
			fmt.Sprintf(`CREATE VIRTUAL TABLE %s USING vec0(owner text partition key, embedding float[48] distance_metric=cosine, chunk_size=128)`, k.vec),
			fmt.Sprintf(`CREATE TRIGGER %[1]s_ad AFTER DELETE ON %[2]s BEGIN
				DELETE FROM %[1]s WHERE rowid = old.id;
				INSERT INTO search_vec_log (kind, id) VALUES (2, old.id);
			END`, k.vec, k.base),
			fmt.Sprintf(`CREATE TRIGGER %[1]s_owner AFTER UPDATE OF %[3]s ON %[2]s
			WHEN old.%[3]s IS NOT new.%[3]s BEGIN
				DELETE FROM %[1]s WHERE rowid = old.id;
				INSERT INTO search_vec_log (kind, id) VALUES (2, old.id);
			END`, k.vec, k.base, k.owner))
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	words := []string{"river", "stone", "cloud", "ember", "frost", "grove", "harbor", "island"}
	var texts []string
	var ids []int64
	for i := range 80 {
		text := words[i%8] + " " + words[(i*5)%8] + " " + words[(i*3+2)%8] + " entry " + strconv.Itoa(i)
		agent := []string{"a", "b"}[i%2]
		ids = append(ids, insertArchival(t, db, archivalRow{Agent: agent, Content: text}))
		texts = append(texts, text)
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		if _, err := db.ExecContext(ctx, `INSERT INTO vec_archival (rowid, owner, embedding) VALUES (?, ?, ?)`,
			ids[i], []string{"a", "b"}[i%2], f32blob(v)); err != nil {
			t.Fatal(err)
		}
	}
	type hit struct {
		id   int64
		dist float64
	}
	queries := []string{"river stone", "frost grove island", "entry 17"}
	want := map[string][]hit{}
	for _, q := range queries {
		qv, err := emb.Embed(ctx, []string{q})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, `SELECT rowid, distance FROM vec_archival WHERE embedding MATCH ? AND k = 10 AND owner = 'a'`, f32blob(qv[0]))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var h hit
			if err := rows.Scan(&h.id, &h.dist); err != nil {
				t.Fatal(err)
			}
			want[q] = append(want[q], h)
		}
		rows.Close()
		if len(want[q]) != 10 {
			t.Fatalf("vec0 answered %q with %d rows", q, len(want[q]))
		}
	}

	for _, opts := range []*searchindex.IndexOptions{{VectorCacheBytes: -1}, nil} {
		x, err := newIndexWarm(ctx, db, emb, opts)
		if err != nil {
			t.Fatal(err)
		}
		var virtual int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name LIKE 'vec\_%' ESCAPE '\' AND sql LIKE 'CREATE VIRTUAL%'`).Scan(&virtual); err != nil || virtual != 0 {
			t.Fatalf("%d vec0 tables left after NewIndex (%v)", virtual, err)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM vec_archival`).Scan(&n); err != nil || n != 80 {
			t.Fatalf("%d vectors after the conversion, want 80 (%v)", n, err)
		}
		for _, q := range queries {
			got, err := x.Search(ctx, q, search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(10))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want[q]) {
				t.Fatalf("%+v %q: %d results, vec0 gave %d", opts, q, len(got), len(want[q]))
			}
			// Rank by rank the same distance; the same rows (ties may
			// order differently).
			gotIDs, wantIDs := map[int64]bool{}, map[int64]bool{}
			for i, r := range got {
				w := want[q][i]
				if math.Abs(r.Source.Distance-w.dist) > 1e-5 {
					t.Fatalf("%+v %q rank %d: %d@%.6f, vec0 %d@%.6f", opts, q, i+1, r.ID, r.Source.Distance, w.id, w.dist)
				}
				gotIDs[r.ID], wantIDs[w.id] = true, true
			}
			if !maps.Equal(gotIDs, wantIDs) {
				t.Fatalf("%+v %q: rows %v, vec0 %v", opts, q, gotIDs, wantIDs)
			}
		}
	}

	// The triggers follow the new tables: a deleted row and a row that
	// changed owner lose their vectors.
	if _, err := db.ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE archival SET agent = 'c' WHERE id = ?`, ids[1]); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM vec_archival WHERE rowid IN (?, ?)`, ids[0], ids[1]).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d vectors of a deleted or re-owned row left (%v)", left, err)
	}
	// A vector of the wrong size is refused, as vec0's float[48] refused it.
	if _, err := db.ExecContext(ctx, `INSERT INTO vec_archival (rowid, owner, embedding) VALUES (?, 'a', ?)`, ids[0], f32blob(make([]float32, 47))); err == nil {
		t.Fatal("a 47-float vector went into a 48-dimension table")
	}
}
