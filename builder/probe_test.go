package builder_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

func TestProbeParts(t *testing.T) {
	ctx := context.Background()
	count := func(st *memory.Store) {
		var n, bytes int64
		storeaccess.Backend(st).DB().QueryRowContext(ctx, `SELECT count(*), coalesce(sum(length(data)),0) FROM search_text_parts`).Scan(&n, &bytes)
		t.Logf("parts %d bytes %d", n, bytes)
	}
	st, err := memory.Open(ctx, "/work/agentsdb/agents-store-1000.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	count(st)
	storeaccess.Backend(st).DB().ExecContext(ctx, `DELETE FROM search_text_parts`)
	storeaccess.Index(st).WarmTextCache(ctx)
	for i := 0; i < 40; i++ {
		if _, err := st.Agent(agentName(i)).Search(ctx, "wx1 wqx2", nil); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	st, err = memory.Open(ctx, "/work/agentsdb/agents-store-1000.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	count(st)
	storeaccess.Index(st).WarmTextCache(ctx)
	st.Agent(agentName(999)).Search(ctx, "wx1 wqx2", nil)
	for i := 0; i < 40; i++ {
		t0 := time.Now()
		if _, err := st.Agent(agentName(i)).Archival().Search(ctx, "wx1 wqx2", nil); err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		t1 := time.Now()
		st.Agent(agentName(i)).Archival().Search(ctx, "wx1 wqx2", nil)
		e := time.Since(t1)
		_ = e
		t2 := time.Now()
		st.Agent(agentName(i+100)).Archival().Search(ctx, "wx1 wqx2", nil)
		t.Log("stored", d, "warm", e, "cold", time.Since(t2))
	}
	st.Close()
}
