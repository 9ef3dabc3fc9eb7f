package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// migratedDB is a new database migrated by memory.Open, closed with the
// test.
func migratedDB(t *testing.T) *sql.DB {
	db, _ := migratedDSN(t)
	return db
}

// migratedDSN is migratedDB with its URL.
func migratedDSN(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn := pgtest.Start(t).NewDatabase(t)
	c, err := memory.Open(context.Background(), dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dsn
}

// The functions the triggers call for each row must not be SQL functions
// PostgreSQL plans again at every call: one it cannot inline (a body with
// a FROM, or a set-returning one) is, and an archival insert paid about
// 140 µs of planning for each of its seven calls of
// engram_archival_conversation. Every engram_ SQL function left must be a
// single expression without FROM (which the planner inlines).
func TestRowFunctionsAreNotReplanned(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	rows, err := db.QueryContext(ctx, `SELECT p.proname, p.proretset, p.prosrc FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		WHERE l.lanname = 'sql' AND p.proname LIKE 'engram\_%' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, src string
		var set bool
		if err := rows.Scan(&name, &set, &src); err != nil {
			t.Fatal(err)
		}
		n++
		if set || strings.Contains(strings.ToUpper(src), "FROM") {
			t.Errorf("%s is a SQL function PostgreSQL cannot inline (set-returning %v): planned again at every call", name, set)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no engram_ SQL function found: the query reads the wrong catalog")
	}
}

// engram_archival_conversation is in the archival indexes' expressions: its
// PL/pgSQL form must give every value the SQL form it replaced gave (an
// index entry written by one must be found by the other), errors alike.
func TestArchivalConversationFunctionUnchanged(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The SQL function as migrations 0019 and 0025 left it.
	if _, err := conn.ExecContext(ctx, `CREATE FUNCTION pg_temp.old_conversation(meta TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN octet_length(c) > 1024 THEN 'sha256:' || encode(sha256(convert_to(c, 'UTF8')), 'hex') ELSE c END
    FROM (SELECT COALESCE(
            CASE WHEN jsonb_typeof(j -> 'conversation') IN ('string', 'number') AND j -> 'conversation' <> '""'::jsonb THEN (j -> 'conversation')::text END,
            CASE WHEN jsonb_typeof(j -> 'conversation_id') IN ('string', 'number') AND j -> 'conversation_id' <> '""'::jsonb THEN (j -> 'conversation_id')::text END,
            CASE WHEN jsonb_typeof(j -> 'session') IN ('string', 'number') AND j -> 'session' <> '""'::jsonb THEN (j -> 'session')::text END,
            CASE WHEN jsonb_typeof(j -> 'session_id') IN ('string', 'number') AND j -> 'session_id' <> '""'::jsonb THEN (j -> 'session_id')::text END,
            CASE WHEN jsonb_typeof(j -> 'thread') IN ('string', 'number') AND j -> 'thread' <> '""'::jsonb THEN (j -> 'thread')::text END,
            CASE WHEN jsonb_typeof(j -> 'thread_id') IN ('string', 'number') AND j -> 'thread_id' <> '""'::jsonb THEN (j -> 'thread_id')::text END,
            NULL) AS c
        FROM (SELECT meta::jsonb AS j) x) v
$$`); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 600) // 1,200 bytes: hashed
	values := []any{nil, "", "null", "{}", "[]", "3", `"x"`, "not json", `{"session": `,
		`{"session": 3}`, `{"session": 3.0}`, `{"session": 1e2}`, `{"session": -0}`, `{"session": "3"}`, `{"session": "\u0033"}`,
		`{"session": ""}`, `{"session": null, "thread": "t"}`, `{"session": {"id": 1}, "thread_id": 9}`, `{"session": [1]}`,
		`{"session": true, "conversation_id": "c"}`, `{"conversation": "a", "session": "b"}`, `{"thread_id": "` + long + `"}`,
		`{"session": "` + strings.Repeat("x", 1024) + `"}`, `{"session": "` + strings.Repeat("x", 1025) + `"}`,
		`{"dia_id": "D3:1", "session": 3, "speaker": "Caroline", "date": "1:56 pm on 8 May, 2023"}`,
		`{"Session": "case"}`, `{"session": "a\"b\\c\n"}`, `{"session": 12345678901234567890123}`,
	}
	for _, v := range values {
		var got, want sql.NullString
		gerr := conn.QueryRowContext(ctx, `SELECT engram_archival_conversation($1)`, v).Scan(&got)
		werr := conn.QueryRowContext(ctx, `SELECT pg_temp.old_conversation($1)`, v).Scan(&want)
		if (gerr == nil) != (werr == nil) || got != want {
			t.Errorf("metadata %.60v: %v (%v), the SQL function gave %v (%v)", v, got, gerr, want, werr)
		}
	}
}

// oldMessageFTS is engram_message_fts as written plainly, as migrations
// 0030 and 0031 wrote it (one SELECT over a subquery) with the two
// messages on each side that 0033 reads, as pg_temp.old_message_fts: the
// definition the function is held to.
const oldMessageFTS = `CREATE FUNCTION pg_temp.old_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT, m_created BIGINT) RETURNS tsvector LANGUAGE plpgsql AS $f$
BEGIN
    RETURN (SELECT CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END
    FROM (SELECT setweight(engram_tsvector(m_content, 1048575 - 1024), 'A') ||
            setweight(to_tsvector('english', engram_message_date(m_created)), 'D') AS own,
        setweight(engram_tsvector(COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -2)) || ' ', '') ||
            COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -1)), ''), 1048575), 'B') AS bef,
        setweight(engram_tsvector(COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 1)), '') ||
            COALESCE(' ' || (SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 2)), ''), 1048575), 'C') AS aft) parts);
END $f$`

// oldFormConn is a connection to a migrated database that holds the old
// form as pg_temp.old_message_fts (pg_temp is the connection's).
func oldFormConn(t *testing.T) *sql.Conn {
	t.Helper()
	conn, err := migratedDB(t).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(context.Background(), oldMessageFTS); err != nil {
		t.Fatal(err)
	}
	return conn
}

// insertMessage writes agent a's message at (batch, seq) as a bare row: the
// triggers index it and its neighbours.
func insertMessage(t *testing.T, ex interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, batch string, seq int64, content string, created int64) {
	t.Helper()
	if _, err := ex.ExecContext(context.Background(), `INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ('a', 'user', $1, $2, $3, $4)`,
		content, batch, seq, created); err != nil {
		t.Fatalf("insert %s/%d: %v", batch, seq, err)
	}
}

// A message's tsvector must be the value the one-SELECT form gives (rows
// written by either are searched alike): stored by the triggers and
// computed by the function, for messages with and without neighbours (up
// to two on each side, with gaps), empty ones, ones at the ends of the
// seq range, and ones whose parts overflow the 1 MB tsvector cap, alone
// or beside each other.
func TestMessageFullTextFunctionAsDefined(t *testing.T) {
	ctx := context.Background()
	conn := oldFormConn(t)
	big := distinctWords(1 << 20)  // a tsvector past 1 MB alone: capped
	half := distinctWords(500_000) // two of these overflow the cap together
	const maxSeq, minSeq = 1<<63 - 1, -1 << 63
	rows := []struct {
		batch   string
		seq     int64
		content string
	}{
		{"plain", 1, "The tide turned at the harbour"}, {"plain", 2, "Bees were in the garden on 8 May, 2023"}, {"plain", 3, "ok"},
		{"five", 1, "one fish"}, {"five", 2, "two fish"}, {"five", 3, "red fish"}, {"five", 4, "blue fish"}, {"five", 5, "last fish"},
		{"gaps", 1, "first"}, {"gaps", 2, "second"}, {"gaps", 4, "fourth"}, {"gaps", 7, "seventh"}, {"gaps", 9, "ninth"},
		{"gap", 1, "first"}, {"gap", 3, "third, no second"},
		{"empty", 1, ""}, {"empty", 2, "between two empty ones"}, {"empty", 3, ""},
		{"ends", maxSeq - 2, "two from last"}, {"ends", maxSeq - 1, "next to last"}, {"ends", maxSeq, "the last seq"},
		{"ends", minSeq, "the first seq"}, {"ends", minSeq + 1, "after it"}, {"ends", minSeq + 2, "two after it"},
		{"big", 1, "before the big one"}, {"big", 2, big}, {"big", 3, "after the big one"},
		{"halves", 1, half}, {"halves", 2, strings.ReplaceAll(half, "w", "k")}, {"halves", 3, strings.ReplaceAll(half, "w", "m")},
		{"alone", 1, "ünïcödé wörds and 😀 emoji"},
	}
	for i, r := range rows {
		insertMessage(t, conn, r.batch, r.seq, r.content, int64(1700000000+i*86400)*1e9)
	}
	// One deleted and one edited: the neighbours' tsvectors are made again.
	if _, err := conn.ExecContext(ctx, `DELETE FROM messages WHERE batch_id = 'plain' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `UPDATE messages SET content = 'edited words' WHERE batch_id = 'empty' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	var n, stored, computed, capped int
	err := conn.QueryRowContext(ctx, `SELECT count(*),
			count(*) FILTER (WHERE fts::text = pg_temp.old_message_fts(agent, batch_id, seq, content, created_at)::text),
			count(*) FILTER (WHERE engram_message_fts(agent, batch_id, seq, content, created_at)::text = pg_temp.old_message_fts(agent, batch_id, seq, content, created_at)::text),
			count(*) FILTER (WHERE length(fts) > 39000)
		FROM messages`).Scan(&n, &stored, &computed, &capped)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(rows)-1 || stored != n || computed != n {
		t.Errorf("%d messages: %d stored and %d computed tsvectors equal what the one-SELECT form gives", n, stored, computed)
	}
	if capped != 6 {
		t.Errorf("%d tsvectors of over 39,000 lexemes, want the 6 of the big and halves batches: the test no longer reaches the cap", capped)
	}
}

// Near the cap, a neighbour's part is kept only if the three parts'
// sizes fit, counted as the one-SELECT form counted them: a part made
// through a query comes back with a short header when small (3 bytes
// fewer), and a neighbour the old form dropped was kept.
func TestMessageFullTextNearTheCap(t *testing.T) {
	ctx := context.Background()
	conn := oldFormConn(t)
	const created = int64(1700000000) * 1e9
	size := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := conn.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ownSize := func(c string) int {
		return size(`SELECT pg_column_size(setweight(engram_tsvector($1, 1048575 - 1024), 'A') ||
			setweight(to_tsvector('english', engram_message_date($2)), 'D'))`, c, created)
	}
	befSize := func(c string) int {
		return size(`SELECT pg_column_size(setweight(engram_tsvector($1, 1048575), 'B'))`, c)
	}
	const aft = "ok"
	aftSize := size(`SELECT pg_column_size(setweight(to_tsvector('english', $1::text), 'C'))`, aft)
	// The largest previous message that leaves about 200 bytes, then an
	// own text that takes the sum 1 to 3 bytes past the cap. The previous
	// message grows by whole words of one form (distinctWords cuts its text
	// at a byte count), so that its size steps evenly.
	words := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "w%dq ", i)
		}
		return b.String()
	}
	lo, hi := 1, 90000
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if befSize(words(mid)) <= 1048575-aftSize-200 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	bef := words(lo)
	bs := befSize(bef)
	own := ""
	for l := 1; l < 400 && own == ""; l++ {
		c := "zq" + strings.Repeat("x", l)
		if s := ownSize(c) + bs + aftSize; s > 1048575 && s <= 1048575+3 {
			own = c
		}
	}
	if own == "" {
		t.Fatalf("no own text takes the parts just past the cap (previous %d bytes, next %d)", bs, aftSize)
	}
	for i, c := range []string{bef, own, aft} {
		insertMessage(t, conn, "b", int64(i+1), c, created)
	}
	var stored, made, old string
	if err := conn.QueryRowContext(ctx, `SELECT fts::text, engram_message_fts(agent, batch_id, seq, content, created_at)::text,
			pg_temp.old_message_fts(agent, batch_id, seq, content, created_at)::text FROM messages WHERE seq = 2`).Scan(&stored, &made, &old); err != nil {
		t.Fatal(err)
	}
	if stored != old || made != old {
		t.Errorf("stored %d characters, made %d, the one-SELECT form %d; the next message's 'ok' in stored: %v, in the one-SELECT form's: %v",
			len(stored), len(made), len(old), strings.Contains(stored, "'ok'"), strings.Contains(old, "'ok'"))
	}
}

// A message's tsvector has three parts (its own words and date, the
// previous message's words, the next one's), each made once: written as
// one SELECT over a subquery, PostgreSQL computed a part wherever the
// CASE named it: each text's tsvector twice, and the function runs twice
// per append (the new message's and its predecessor's).
func TestMessageFullTextPartsMadeOnce(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SET LOCAL track_functions = 'pl'`); err != nil {
		t.Skipf("counting function calls needs a superuser: %v", err)
	}
	for seq, content := range []string{"before", "the message", "after"} {
		insertMessage(t, tx, "b", int64(seq), content, 0)
	}
	calls := func() int {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT pg_stat_get_xact_function_calls('engram_tsvector(text,integer)'::regprocedure)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := calls()
	if _, err := tx.ExecContext(ctx, `SELECT engram_message_fts(agent, batch_id, seq, content, created_at) FROM messages WHERE seq = 1`); err != nil {
		t.Fatal(err)
	}
	if n := calls() - before; n != 3 {
		t.Errorf("one message's tsvector made %d tsvectors of text, want 3 (its own, the previous message's, the next one's)", n)
	}
}

// An archival insert and a message append on PostgreSQL cost about what
// the CRDT block append beside them costs, not several times it: each row
// trigger's lookups are planned once a session. The bound is loose, for
// loaded machines: with the SQL row functions a message append took 5.9×
// a block append here (1.55 ms), and 2.3× with them in PL/pgSQL.
func TestRowWritesCostPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	c, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := c.Agent("timed")
	const n = 300
	per := func(write func(i int) error) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			for i := range n / 3 {
				if err := write(i); err != nil {
					t.Fatal(err)
				}
			}
			best = min(best, time.Since(start)/(n/3))
		}
		return best
	}
	line := func(i int) string { return fmt.Sprintf("note %d: the tide turned at the harbour", i) }
	archival := per(func(i int) error {
		_, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: line(i)})
		return err
	})
	messages := per(func(i int) error {
		_, err := a.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: line(i), BatchID: "s"})
		return err
	})
	if _, err := a.CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	blocks := per(func(i int) error { return a.Block("notes").Append(ctx, line(i)+"\n") })
	t.Logf("per write, best of 3 runs of %d: archival %v, message %v, block append %v", n/3, archival, messages, blocks)
	for what, d := range map[string]time.Duration{"archival insert": archival, "message append": messages} {
		if d > 4*blocks {
			t.Errorf("%s takes %v, more than 4× a block append's %v", what, d, blocks)
		}
	}
}
