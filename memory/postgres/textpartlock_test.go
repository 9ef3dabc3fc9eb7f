package postgres

import (
	"context"
	"testing"
)

// TestTextPartKeys: engram_text_part_key's keys are of the stored text
// partitions' class (so a writer takes them after its other locks, see
// locks.go), one per kind and owner.
func TestTextPartKeys(t *testing.T) {
	b := openTestBackend(t)
	ctx := context.Background()
	seen := map[int64]string{}
	for _, kind := range []int{2, 4} {
		for _, owner := range []string{"", "a", "b", "agent-0001", "agent-0002", "ünïcode", "2:a"} {
			var k int64
			if err := b.DB().QueryRowContext(ctx, `SELECT engram_text_part_key(?, ?)`, kind, owner).Scan(&k); err != nil {
				t.Fatal(err)
			}
			if k>>56 != lockClassTextPart {
				t.Errorf("key of (%d, %q) is %#x: class %d, want %d", kind, owner, k, k>>56, lockClassTextPart)
			}
			id := string(rune('0'+kind)) + ":" + owner
			if o, dup := seen[k]; dup {
				t.Errorf("(%s) and (%s) share key %#x", o, id, k)
			}
			seen[k] = id
		}
	}
}
