package searchindex_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/engram-go/engram/search"
)

// TestMessageIDMovedPostgres: a message's id changed by hand on
// PostgreSQL; a whole cache following the log ranks as one warmed afresh.
// The log held the new id only, and the cache kept the old one too.
func TestMessageIDMovedPostgres(t *testing.T) {
	ctx := context.Background()
	p := &pgPartial{t: t}
	p.store, p.b = openPGStore(t)
	raw := func(q string) {
		if err := p.b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q); return err }); err != nil {
			t.Fatal(err)
		}
	}
	raw(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ('a','user','kale fig','x',1,0), ('a','user','iris','x',2,0), ('a','user','lemon kale','x',3,0)`)
	whole := p.whole()
	raw(`UPDATE messages SET id = 100000 WHERE content = 'iris'`)
	fresh := p.whole()
	o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages)
	want, err := fresh.Search(ctx, "iris", search.Scope{Agent: "a"}, o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := whole.Search(ctx, "iris", search.Scope{Agent: "a"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameBits(want, got); err != nil {
		t.Fatalf("%v\nfresh %v\nwhole %v", err, keys(want), keys(got))
	}
}
