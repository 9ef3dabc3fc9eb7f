package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

func TestConsolidateCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.db")
	s, err := memory.Open(context.Background(), db, &memory.Options{KeepDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"The build runs on Fridays.", "the build runs on FRIDAYS.", "Deploys need two reviews."} {
		if _, err := s.Agent("ada").Archival().Insert(context.Background(), memory.ArchivalEntry{Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	out := ok(t, db, "consolidate", "--agent", "ada", "--dry-run")
	if !strings.Contains(out, "1 clusters, 0 proposed, 0 merged") || !strings.Contains(out, "Fridays") {
		t.Fatalf("dry run:\n%s", out)
	}
	out = ok(t, db, "--json", "consolidate", "--agent", "ada", "--apply-exact")
	var reps []memory.ConsolidateReport
	if err := json.Unmarshal([]byte(out), &reps); err != nil || len(reps) != 1 || reps[0].Applied != 1 {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if _, errs, code := cli(t, db, "", "consolidate"); code == 0 || !strings.Contains(errs, "--agent") {
		t.Fatalf("without --agent: exit %d, %s", code, errs)
	}
	if _, errs, code := cli(t, db, "", "consolidate", "--agent", "nobody"); code == 0 || !strings.Contains(errs, "nobody") {
		t.Fatalf("unknown agent: exit %d, %s", code, errs)
	}
}
