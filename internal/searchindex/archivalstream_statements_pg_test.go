package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestArchivalStreamRestoreTwoPostgres's entries restored and superseded
// two at a time inside a SAVEPOINT: the rows a statement wrote there
// carry a subtransaction's id, and the entries around them are rewritten
// all the same.
func TestArchivalStreamRestoreInSavepointPostgres(t *testing.T) {
	ctx := context.Background()
	_, b := openPGStore(t)
	exec := func(sp bool, qs ...string) {
		t.Helper()
		if err := b.Write(ctx, func(tx *sql.Tx) error {
			if sp {
				if _, err := tx.ExecContext(ctx, `SAVEPOINT s`); err != nil {
					return err
				}
			}
			for _, q := range qs {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			if sp {
				_, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT s`)
				return err
			}
			return nil
		}); err != nil {
			t.Fatalf("%v: %v", qs, err)
		}
		if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
			t.Errorf("after %v (savepoint %v): entries %v stale", qs, sp, bad)
		}
	}
	exec(false, `INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to) VALUES
		(1, 'a', 'papa', '{}', '[]', '', 0, 0, NULL),
		(2, 'a', 'alpha', '{}', '[]', '', 10000000000000, 0, 1),
		(3, 'a', 'bravo', '{}', '[]', '', 20000000000000, 0, 1),
		(4, 'a', 'november', '{}', '[]', '', 60000000000, 0, NULL)`)
	exec(true, `UPDATE archival SET valid_to = NULL WHERE id IN (2, 3)`)
	exec(true, `UPDATE archival SET valid_to = 1 WHERE id IN (2, 3)`)
}

// One statement restoring an entry and superseding the live entry after
// it: the entry restored sees no live entry after it any more, and the
// one superseded sees the restored one before it; the entry before both,
// indexed with the superseded one (near it in time), must be rewritten
// all the same. Then the same swap back, and with a superseded entry
// between the two.
func TestArchivalStreamRestoreAndSupersedeOneStatementPostgres(t *testing.T) {
	_, b := openPGStore(t)
	exec := execStaleChecked(t, b)
	exec(`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to) VALUES
		(1, 'a', 'alpha', '{}', '[]', '', 0, 0, NULL),
		(2, 'a', 'bravo', '{}', '[]', '', 500000000, 0, 1),
		(3, 'a', 'charlie', '{}', '[]', '', 1000000000, 0, NULL),
		(11, 'b', 'delta', '{}', '[]', '', 0, 0, NULL),
		(12, 'b', 'echo', '{}', '[]', '', 500000000, 0, 1),
		(13, 'b', 'foxtrot', '{}', '[]', '', 700000000, 0, 1),
		(14, 'b', 'golf', '{}', '[]', '', 1000000000, 0, NULL)`)
	swap := `UPDATE archival SET valid_to = CASE WHEN valid_to IS NULL THEN 1 END WHERE id IN `
	exec(swap + `(2, 3)`)
	exec(swap + `(2, 3)`)
	exec(swap + `(12, 14)`)
	exec(swap + `(12, 14)`)
}

// Random multi-row hand edits of a small stream with some keyed entries,
// some inside a savepoint, checked against engram_archival_fts after
// each statement.
func TestArchivalStreamRandomStatementsPostgres(t *testing.T) {
	ctx := context.Background()
	_, b := openPGStore(t)
	seed := int64(12)
	rng := rand.New(rand.NewSource(seed))
	const n = 10
	var vals []string
	min := int64(60_000_000_000)
	for i := 1; i <= n; i++ {
		vt := "NULL"
		if rng.Intn(3) == 0 {
			vt = "1"
		}
		meta := "{}"
		if rng.Intn(4) == 0 {
			meta = `{"conversation":"k"}`
		}
		vals = append(vals, fmt.Sprintf("(%d, 'a', 'w%d', '%s', '[]', '', %d, 0, %s)", i, i, meta, int64(rng.Intn(6))*min*10+int64(rng.Intn(3))*min, vt))
	}
	applied := 0
	do := func(sp bool, q string) {
		t.Helper()
		if err := b.Write(ctx, func(tx *sql.Tx) error {
			if sp {
				if _, err := tx.ExecContext(ctx, `SAVEPOINT s`); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
			if sp {
				_, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT s`)
				return err
			}
			return nil
		}); err != nil {
			t.Logf("%s: %v", q, err)
			return
		}
		applied++
	}
	do(false, `INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to) VALUES `+strings.Join(vals, ", "))
	if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
		t.Fatalf("after insert: %v stale", bad)
	}
	failures := 0
	for step := 0; step < 300 && failures < 5; step++ {
		var ids []string
		for i := 1; i <= n; i++ {
			if rng.Intn(3) == 0 {
				ids = append(ids, fmt.Sprint(i))
			}
		}
		if len(ids) < 2 {
			continue
		}
		in := strings.Join(ids, ", ")
		var q string
		switch rng.Intn(5) {
		case 0:
			q = `UPDATE archival SET valid_to = CASE WHEN valid_to IS NULL THEN 1 END WHERE id IN (` + in + `)`
		case 1:
			q = `UPDATE archival SET valid_to = NULL WHERE id IN (` + in + `)`
		case 2:
			q = `UPDATE archival SET valid_to = 1 WHERE id IN (` + in + `)`
		case 3:
			q = `UPDATE archival SET metadata_json = CASE WHEN metadata_json = '{}' THEN '{"conversation":"k"}' ELSE '{}' END WHERE id IN (` + in + `)`
		case 4:
			q = fmt.Sprintf(`UPDATE archival SET created_at = created_at + %d WHERE id IN (`+in+`)`, int64(rng.Intn(3)-1)*min*20)
		}
		sp := rng.Intn(2) == 0
		do(sp, q)
		if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
			failures++
			t.Errorf("step %d: %s (savepoint %v): %v stale", step, q, sp, bad)
			do(false, `UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)`)
		}
	}
	if applied < 150 {
		t.Fatalf("%d statements applied: the edits tested too little", applied)
	}
}
