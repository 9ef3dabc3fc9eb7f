package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	sqlitebackend "github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/toolrules"
)

const (
	buildAgent = "bench"
	buildBase  = "You are a careful project assistant."
)

var buildPara = "The team agreed to ship the export fix on Friday after the review. Owners: Sam for the backend, Kim for the UI. "

var buildRules = []toolrules.Rule{toolrules.ExitLoop("send_message"), toolrules.MaxCalls("search", 3)}

// fillBuildStore writes nBlocks blocks (a quarter Core, the rest pinned
// Working, 450-900 characters each) and 500 messages in 100 complete
// batches plus one current user message: the DESIGN's "20 blocks, 500
// messages" agent when nBlocks is 20.
func fillBuildStore(ctx context.Context, st *memory.Store, nBlocks int) error {
	for i := range nBlocks {
		typ := blocks.Working
		if i < max(1, nBlocks/4) {
			typ = blocks.Core
		}
		_, err := st.Agent(buildAgent).CreateBlock(ctx, memory.BlockSpec{Label: fmt.Sprintf("block-%04d", i),
			Description: fmt.Sprintf("Block number %d.", i), Type: typ, Pinned: true, Priority: i % 7,
			Value: strings.Repeat(buildPara, 4+i%5)})

		if err != nil {
			return err
		}
	}
	for b := range 100 {
		batch := fmt.Sprintf("evt-%03d", b)
		for j := range 5 {
			role := memory.RoleUser
			if j%2 == 1 {
				role = memory.RoleAssistant
			}
			content := fmt.Sprintf("Message %d of event %d. %s", j, b, buildPara[:40+(b*7+j*13)%60])
			if _, err := st.Agent(buildAgent).Messages().Append(ctx, memory.Message{Role: role, BatchID: batch, Content: content}); err != nil {
				return err
			}
		}
		if err := st.Agent(buildAgent).Messages().CompleteBatch(ctx, batch); err != nil {
			return err
		}
	}
	_, err := st.Agent(buildAgent).Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "now", Content: "What is the plan for Friday?"})
	return err
}

// newBuilder is the builder under test. limits false means no budgets, so
// every block and message is in the request (as in the concatenation).
func newBuilder(st *memory.Store, cache *builder.Cache, limits bool) builder.Builder {
	// Negative limits mean none (zero would mean the defaults).
	cfg := builder.ContextConfig{Cache: cache, TokenCounts: st, MaxMessagesCap: -1,
		DefaultLimits: builder.ModelContextLimits{MaxTokens: -1, MemoryTokens: -1, ReservedResponseTokens: -1}}
	if limits {
		cfg.DefaultLimits = builder.ModelContextLimits{MaxTokens: 128_000, MemoryTokens: 32_000, ReservedResponseTokens: 4_000}
	}
	return builder.New(st.Agent(buildAgent), cfg).WithMessages(st.Agent(buildAgent).Messages()).WithActiveBatch("now").
		WithModelInfo(builder.ModelInfo{Name: "gpt-4"}).
		WithBaseInstructions(buildBase).
		WithToolRules(buildRules...).
		WithTools(builder.ToolList{{Name: "send_message", Description: "Reply.", Parameters: []byte(`{"type":"object"}`)},
			{Name: "search", Description: "Search memory.", Parameters: []byte(`{"type":"object"}`)}})
}

// concatPieces joins pre-rendered pieces the cheapest way: the baseline.
func concatPieces(pieces []string) string {
	n := 0
	for _, p := range pieces {
		n += len(p) + 2
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, p := range pieces {
		sb.WriteString(p)
		sb.WriteString("\n\n")
	}
	return sb.String()
}

// benchBuild: comparison 4, context build vs concatenation.
func benchBuild(ctx context.Context, cfg config, tmp string, r *report) error {
	const sec = "build"
	path := filepath.Join(tmp, "build.db")
	st, err := memory.Open(ctx, path, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := fillBuildStore(ctx, st, 20); err != nil {
		return err
	}
	b := newBuilder(st, builder.NewCache(), true)
	req, err := b.Build(ctx) // warms the builder cache and the store's LRU
	if err != nil {
		return err
	}
	if len(req.Messages) != 501 || len(req.Metadata.BlocksIncluded) != 20 {
		return fmt.Errorf("build: %d messages, %d blocks in the request (want 501, 20)", len(req.Messages), len(req.Metadata.BlocksIncluded))
	}
	// The baseline: the same pre-rendered strings, concatenated.
	metas, err := st.Agent(buildAgent).Blocks(ctx)
	if err != nil {
		return err
	}
	msgs, err := st.Agent(buildAgent).Messages().List(ctx, nil)
	if err != nil {
		return err
	}
	pieces := []string{buildBase}
	for _, m := range metas {
		pieces = append(pieces, builder.RenderBlock(m, builder.RenderOptions{IncludeDescriptions: true}))
	}
	pieces = append(pieces, toolrules.Render(buildRules))
	for _, m := range msgs {
		pieces = append(pieces, m.Content)
	}
	// Builds and concatenations alternate in short chunks, so GC and
	// neighbours' load hit both alike; the figure is the median per-op time
	// over all chunks of all repeats.
	var eT, cT []float64
	var sink int
	const chunks = 10
	per := max(1, cfg.buildIters/chunks)
	for range cfg.repeats {
		for range chunks {
			t0 := time.Now()
			for range per {
				req, err := b.Build(ctx)
				if err != nil {
					return err
				}
				sink += len(req.System)
			}
			eT = append(eT, ms(time.Since(t0))/float64(per))
			iters := per * 20 // concatenation is fast: more iterations per chunk
			t0 = time.Now()
			for range iters {
				sink += len(concatPieces(pieces))
			}
			cT = append(cT, ms(time.Since(t0))/float64(iters))
		}
	}
	_ = sink
	r.time(sec, "context build, 20 blocks + 500 msgs (warm) vs concat", median(eT), median(cT),
		fmt.Sprintf("budget: within 3× and under 1 ms; Build includes store reads, token accounting, budgets; %d-byte system prompt", len(req.System)))

	// Cold: open a store file with 1,000 blocks and build once, against
	// opening the file with database/sql and concatenating the stored
	// renderings (the least any cold path can do).
	cpath := filepath.Join(tmp, "build-cold.db")
	cst, err := memory.Open(ctx, cpath, nil)
	if err != nil {
		return err
	}
	if err := fillBuildStore(ctx, cst, cfg.buildColdBlocks); err != nil {
		cst.Close()
		return err
	}
	if err := cst.Close(); err != nil {
		return err
	}
	var eC, bC []float64
	var blocksIn, sysLen int
	for range cfg.repeats {
		t0 := time.Now()
		st, err := memory.Open(ctx, cpath, nil)
		if err != nil {
			return err
		}
		req, err := newBuilder(st, builder.NewCache(), false).Build(ctx)
		if err != nil {
			st.Close()
			return err
		}
		eC = append(eC, ms(time.Since(t0)))
		blocksIn, sysLen = len(req.Metadata.BlocksIncluded), len(req.System)
		st.Close()

		t0 = time.Now()
		s, err := coldConcat(ctx, cpath)
		if err != nil {
			return err
		}
		bC = append(bC, ms(time.Since(t0)))
		sink += len(s)
	}
	if blocksIn != cfg.buildColdBlocks {
		return fmt.Errorf("cold build included %d of %d blocks", blocksIn, cfg.buildColdBlocks)
	}
	r.time(sec, fmt.Sprintf("cold open + first build, %s blocks vs SQL read + concat", humanCount(cfg.buildColdBlocks)), median(eC), median(bC),
		fmt.Sprintf("engram: memory.Open + Build with a fresh builder.Cache, token counts read from the store (%d-byte prompt; the very first build after the writes tokenized and saved them: %s); baseline: sql.Open + 2 SELECTs",
			sysLen, formatValue(eC[0], unitMS)))
	return nil
}

// coldConcat opens the store file with plain database/sql, reads the
// stored renderings and message contents and concatenates them.
func coldConcat(ctx context.Context, path string) (string, error) {
	db, err := sql.Open(sqlitebackend.Driver, path+"?_busy_timeout=10000")
	if err != nil {
		return "", err
	}
	defer db.Close()
	pieces := []string{buildBase}
	rows, err := db.QueryContext(ctx, `SELECT label, permission, description, rendered FROM blocks WHERE owner = ? ORDER BY id`, buildAgent)
	if err != nil {
		return "", err
	}
	for rows.Next() {
		var label, perm, desc, rendered string
		if err := rows.Scan(&label, &perm, &desc, &rendered); err != nil {
			rows.Close()
			return "", err
		}
		pieces = append(pieces, "<block:"+label+` permission="`+perm+`">`+"\n"+desc+"\n\n"+rendered+"\n</block:"+label+">")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", err
	}
	rows, err = db.QueryContext(ctx, `SELECT content FROM messages WHERE agent = ? ORDER BY id`, buildAgent)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return "", err
		}
		pieces = append(pieces, c)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	pieces = append(pieces, toolrules.Render(buildRules))
	return concatPieces(pieces), nil
}
