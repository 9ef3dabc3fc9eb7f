package postgres

import (
	"context"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// A multi-type FTS ranked in SQL fuses by score on PostgreSQL too
// (FullTextMax): the archival entry matching both query words comes
// before the only block, which matches one word its table holds in every
// row. By rank alone both were first of their list, and the block won.
func TestFusionAcrossTypesPostgres(t *testing.T) {
	ctx := context.Background()
	b := openTestBackend(t)
	db := b.DB()
	if _, err := db.ExecContext(ctx, `INSERT INTO blocks
		(owner, label, description, block_type, permission, schema_json, char_limit, rendered, created_at, updated_at)
		VALUES ('a', 'persona', '', 'working', 'ReadWrite', '{}', 5000, 'I am an analytical assistant.', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"Babbage designed the Analytical Engine in 1837.", "Lovelace wrote the first program.",
		"The difference engine computed tables.", "Jacquard looms used punched cards.", "Steam powered the mills of Manchester."} {
		if _, err := db.ExecContext(ctx, `INSERT INTO archival
			(agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
			VALUES ('a', ?, '{}', '[]', '', 1, 1)`, c); err != nil {
			t.Fatal(err)
		}
	}
	x, err := searchindex.NewIndex(ctx, db, b.SearchDialect(), nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rs, err := x.Search(ctx, "analytical engine", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < 2 || rs[0].Type != search.Archival || rs[0].Content != "Babbage designed the Analytical Engine in 1837." {
		t.Fatalf("results %+v, want the archival entry matching both words first", rs)
	}
	for i, r := range rs {
		if r.Source.FTSNorm <= 0 || r.Source.FTSNorm > 1 || r.Score != r.Source.FTSNorm || i > 0 && r.Score > rs[i-1].Score {
			t.Errorf("#%d %v %d: score %v, FTSNorm %v", i+1, r.Type, r.ID, r.Score, r.Source.FTSNorm)
		}
	}
}
