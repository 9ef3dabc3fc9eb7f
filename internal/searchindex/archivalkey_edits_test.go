package searchindex_test

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/testenv"
)

// Random multi-row hand edits of archival entries (conversation keys
// changing with valid_to, place, id, agent and created_at in one
// statement; inserts with explicit ids; upserts; deletes), written from
// another pool: caches following the log and a partial cache loaded at
// each step rank as SQL does.
func TestArchivalKeyEditsFollowedLikeSQL(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "random archival edits, each step's rankings compared with SQL's")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db, other := openDBAt(t, path), openDBAt(t, path)
	rng := rand.New(rand.NewSource(77))
	min := int64(60_000_000_000)
	metas := []string{`{}`, `{"conversation":"k"}`, `{"session":"k"}`, `{"thread":"j"}`, `{"conversation":""}`, `{"conversation_id":7}`, `{"note":"x"}`}
	words := strings.Fields("apple banana cherry damson elder fig grape hazel")
	row := func(id int) string {
		vt := "NULL"
		if rng.Intn(3) == 0 {
			vt = "1"
		}
		pos := "NULL"
		if rng.Intn(4) == 0 {
			pos = fmt.Sprint(rng.Intn(20))
		}
		return fmt.Sprintf("(%d, '%s', '%s %s', '%s', '[]', '', %d, 0, %s, %s)", id, []string{"a", "b"}[rng.Intn(2)], words[rng.Intn(len(words))], words[rng.Intn(len(words))],
			metas[rng.Intn(len(metas))], int64(rng.Intn(8))*min*10+int64(rng.Intn(3))*min, vt, pos)
	}
	const cols = `(id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to, conversation_pos)`
	var vals []string
	for i := 1; i <= 16; i++ {
		vals = append(vals, row(i))
	}
	if _, err := other.ExecContext(ctx, `INSERT INTO archival `+cols+` VALUES `+strings.Join(vals, ", ")); err != nil {
		t.Fatal(err)
	}
	followed := followedCaches(t, db)
	agents := []string{"a", "b"}
	queries := append([]string{}, words...)
	applied := 0
	for step := 0; step < 150; step++ {
		var ids []string
		for i := 1; i <= 40; i++ {
			if rng.Intn(6) == 0 {
				ids = append(ids, fmt.Sprint(i))
			}
		}
		if len(ids) == 0 {
			continue
		}
		in := strings.Join(ids, ", ")
		m1, m2 := metas[rng.Intn(len(metas))], metas[rng.Intn(len(metas))]
		var q string
		switch rng.Intn(10) {
		case 0:
			q = `UPDATE archival SET valid_to = CASE WHEN valid_to IS NULL THEN 1 END WHERE id IN (` + in + `)`
		case 1:
			q = fmt.Sprintf(`UPDATE archival SET metadata_json = CASE WHEN id %% 2 = 0 THEN '%s' ELSE '%s' END WHERE id IN (`+in+`)`, m1, m2)
		case 2:
			q = fmt.Sprintf(`UPDATE archival SET metadata_json = '%s', valid_to = CASE WHEN valid_to IS NULL THEN 1 END, conversation_pos = %d WHERE id IN (`+in+`)`, m1, rng.Intn(20))
		case 3:
			q = fmt.Sprintf(`UPDATE archival SET metadata_json = '%s', agent = CASE agent WHEN 'a' THEN 'b' ELSE 'a' END WHERE id IN (`+in+`)`, m1)
		case 4:
			q = fmt.Sprintf(`UPDATE archival SET id = id + 20, metadata_json = CASE WHEN metadata_json = '{}' THEN '%s' ELSE '{}' END WHERE id IN (`+in+`) AND id <= 20`, m1)
		case 5:
			q = fmt.Sprintf(`UPDATE archival SET id = id - 20, metadata_json = '%s' WHERE id IN (`+in+`) AND id > 20`, m2)
		case 6:
			q = `INSERT INTO archival ` + cols + ` VALUES ` + row(rng.Intn(40)+1) + `, ` + row(rng.Intn(40)+1)
		case 7:
			q = `DELETE FROM archival WHERE id IN (` + in + `)`
		case 8:
			q = `INSERT INTO archival ` + cols + ` VALUES ` + row(rng.Intn(40)+1) + ` ON CONFLICT (id) DO UPDATE SET metadata_json = excluded.metadata_json, valid_to = excluded.valid_to, created_at = excluded.created_at`
		case 9:
			q = fmt.Sprintf(`UPDATE archival SET created_at = created_at + %d, metadata_json = '%s' WHERE id IN (`+in+`)`, int64(rng.Intn(3)-1)*min*20, m1)
		}
		if _, err := other.ExecContext(ctx, q); err != nil {
			continue
		}
		applied++
		partialLikeSQL(t, db, fmt.Sprintf("step %d: %s", step, q), agents, queries, followed)
	}
	if applied < 100 {
		t.Fatalf("%d of 150 statements applied: the edits tested too little", applied)
	}
}
