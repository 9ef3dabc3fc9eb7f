package postgres_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// A message's tsvector, read with its neighbours in one statement
// (migration 0041), is what migration 0033's four statements made, on
// rows written by hand at the int64 edges of seq, with gaps, moves
// between agents and batches, edits and deletes: the stored fts (as the
// triggers left it) and the function's value, against 0033's function.
func TestMessageFTSLikeFourStatements(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	old, err := os.ReadFile("../../migrations/postgres/0033_message_two_turns.sql")
	if err != nil {
		t.Fatal(err)
	}
	s := string(old)
	i := strings.Index(s, "CREATE OR REPLACE FUNCTION engram_message_fts(")
	j := strings.Index(s[i:], "END $$;")
	body := strings.Replace(s[i:i+j+len("END $$;")], "engram_message_fts(", "engram_message_fts_0033(", 1)
	if _, err := db.ExecContext(ctx, body); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil && !strings.Contains(err.Error(), "duplicate key") {
			t.Fatalf("%s: %v", q, err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "running", "ran", "the", "", "naïve", "Straße", "x1"}
	text := func() string {
		w := make([]string, r.IntN(5))
		for k := range w {
			w[k] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	seqs := []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt64 + 2, math.MinInt64 + 3, -2, -1, 0, 1, 2, 3, 5, 6,
		math.MaxInt64 - 3, math.MaxInt64 - 2, math.MaxInt64 - 1, math.MaxInt64}
	for _, a := range []string{"a", "b"} {
		for _, b := range []string{"b1", "b2", ""} {
			for _, sq := range seqs {
				if r.IntN(4) > 0 {
					exec(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ($1, 'user', $2, $3, $4, $5)`, a, text(), b, sq, r.Int64())
				}
			}
		}
	}
	check := func(step string) {
		t.Helper()
		var bad int
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE fts IS DISTINCT FROM engram_message_fts_0033(agent, batch_id, seq, content, created_at)
			OR engram_message_fts(agent, batch_id, seq, content, created_at) IS DISTINCT FROM engram_message_fts_0033(agent, batch_id, seq, content, created_at)) FROM messages`).Scan(&n, &bad); err != nil {
			t.Fatal(err)
		}
		if bad > 0 {
			t.Fatalf("after %s: %d of %d messages' fts differ from 0033's", step, bad, n)
		}
	}
	check("inserts")
	for round := range 300 {
		a := []string{"a", "b"}[r.IntN(2)]
		b := []string{"b1", "b2", ""}[r.IntN(3)]
		sq := seqs[r.IntN(len(seqs))]
		switch r.IntN(7) {
		case 0:
			exec(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ($1, 'user', $2, $3, $4, 1)`, a, text(), b, sq)
		case 1:
			exec(`UPDATE messages SET content = $1 WHERE agent = $2 AND batch_id = $3 AND seq = $4`, text(), a, b, sq)
		case 2:
			exec(`DELETE FROM messages WHERE agent = $1 AND batch_id = $2 AND seq = $3`, a, b, sq)
		case 3:
			exec(`UPDATE messages SET agent = $1, batch_id = $2, seq = $3 WHERE id = (SELECT id FROM messages ORDER BY id LIMIT 1 OFFSET $4)`, a, b, sq, r.IntN(40))
		case 4: // several rows at once
			exec(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ($1, 'user', $2, $3, $4, 1), ($1, 'user', $5, $3, $4 + 1, 1)`, a, text(), b, max(sq, math.MinInt64+2)/2, text())
		case 5: // many rows in one statement
			exec(`UPDATE messages SET content = $1 || content WHERE agent = $2 AND batch_id = $3`, text()+" ", a, b)
		case 6:
			exec(`DELETE FROM messages WHERE agent = $1 AND batch_id = $2 AND seq > $3`, a, b, sq)
		}
		check(fmt.Sprint("round ", round))
	}
}
