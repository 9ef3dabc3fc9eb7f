package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/memory"
	sqlitebackend "github.com/engram-go/engram/memory/sqlite" // the bare baselines use the store's driver
	"github.com/engram-go/engram/schema"
)

// appendOp is one append: a block (by index into the plan's labels) and
// the text, plus the automerge change bytes that append produces (for the
// bare-insert baseline).
type appendOp struct {
	block int
	text  string
	data  []byte
}

// appendPlan is a deterministic sequence of realistic appends (note-like
// lines of 20-160 characters) over blocks that each stay under the
// default 5,000-character limit: a new block starts when the next line
// would not fit.
type appendPlan struct {
	labels []string
	ops    []appendOp
	// crdt is what each append's CRDT work took on the standalone
	// document (edit, commit, extracting the change, rendering): the part
	// of a write no store can skip.
	crdt []time.Duration
}

var noteWords = strings.Fields(`user asked about the export fix deploy schedule review owner backend
	frontend decided to postpone ship friday blocked waiting on api quota billing ticket customer
	reported latency spike dashboard regression rollback migration index query plan cache warm
	cold start memory pressure retry budget alert pager on-call summary next steps follow up`)

func newAppendPlan(prefix string, ops int, seed uint64) (*appendPlan, error) {
	r := rand.New(rand.NewPCG(seed, 7))
	p := &appendPlan{}
	size := blocks.DefaultCharLimit // forces a first block
	var doc *blocks.Document
	for i := range ops {
		var sb strings.Builder
		fmt.Fprintf(&sb, "- [%04d] ", i)
		target := 20 + r.IntN(141)
		for sb.Len() < target {
			sb.WriteString(noteWords[r.IntN(len(noteWords))])
			sb.WriteByte(' ')
		}
		text := strings.TrimSpace(sb.String()) + ".\n"
		if size+len(text) > blocks.DefaultCharLimit {
			label := fmt.Sprintf("%s-%03d", prefix, len(p.labels))
			p.labels = append(p.labels, label)
			size = 0
			var err error
			doc, err = blocks.New(blocks.Info{Label: label, Type: blocks.Working, Schema: schema.Text{},
				Permission: blocks.ReadWrite, Owner: "agent"}, nil)
			if err != nil {
				return nil, err
			}
			if _, heads, err := doc.PendingChanges(); err != nil {
				return nil, err
			} else if err := blockseam.MarkPersisted(doc, heads); err != nil {
				return nil, err
			}
		}
		size += len(text)
		// The same append on a standalone document gives the change bytes
		// the store writes for it.
		t := time.Now()
		if err := doc.AppendText(text, blocks.Agent); err != nil {
			return nil, err
		}
		data, heads, err := doc.PendingChanges()
		if err != nil {
			return nil, err
		}
		if err := blockseam.MarkPersisted(doc, heads); err != nil {
			return nil, err
		}
		_ = doc.Render()
		p.crdt = append(p.crdt, time.Since(t))
		p.ops = append(p.ops, appendOp{block: len(p.labels) - 1, text: text, data: data})
	}
	return p, nil
}

// bareDSN is the store's writer set-up without the store: WAL,
// synchronous=NORMAL, immediate transactions.
func bareDSN(path string) string {
	return path + "?_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate"
}

type bareStore struct {
	db *sql.DB
}

func openBare(ctx context.Context, path string) (*bareStore, error) {
	db, err := sql.Open(sqlitebackend.Driver, bareDSN(path))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // SQLite has one writer; a Go-side queue is the fastest way to share it
	if _, err := db.ExecContext(ctx, `CREATE TABLE block_updates (
		block_id INTEGER NOT NULL, seq INTEGER NOT NULL, epoch INTEGER NOT NULL, actor TEXT NOT NULL,
		data BLOB NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (block_id, seq)) WITHOUT ROWID`); err != nil {
		db.Close()
		return nil, err
	}
	return &bareStore{db: db}, nil
}

// insert is the baseline write: one autocommit INSERT of the change bytes.
func (b *bareStore) insert(ctx context.Context, block, seq int, data []byte) error {
	_, err := b.db.ExecContext(ctx, `INSERT INTO block_updates (block_id, seq, epoch, actor, data, created_at)
		VALUES (?, ?, 0, 'agent', ?, ?)`, block, seq, data, time.Now().UnixNano())
	return err
}

// schemaSQL is a diagnostic middle ground: the SQL the store runs per
// append (store the rendering in an UPDATE whose WHERE checks the sequence
// the cache last saw, which marks the block for FTS5 re-indexing by
// trigger; insert the update) on engram's own schema, without automerge,
// the cache or the Go store around it.
type schemaSQL struct {
	db   *sql.DB
	last map[int64]int64 // block id -> sequence, as the store's cache knows it
}

// openSchemaSQL opens engram's schema; noFTS drops the trigger that marks
// a block for FTS5 re-indexing when its rendering changes, to isolate that
// cost.
func openSchemaSQL(ctx context.Context, path string, noFTS bool) (*schemaSQL, error) {
	db, err := sql.Open(sqlitebackend.Driver, bareDSN(path)+"&_foreign_keys=1")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, _, err := sqlitebackend.Migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	if noFTS {
		if _, err := db.ExecContext(ctx, `DROP TRIGGER fts_blocks_au`); err != nil {
			db.Close()
			return nil, err
		}
	}
	return &schemaSQL{db: db, last: map[int64]int64{}}, nil
}

func (s *schemaSQL) createBlocks(ctx context.Context, labels []string) ([]int64, error) {
	ids := make([]int64, len(labels))
	for i, l := range labels {
		res, err := s.db.ExecContext(ctx, `INSERT INTO blocks
			(owner, label, description, block_type, permission, schema_json, char_limit, rendered, created_at, updated_at)
			VALUES ('agent', ?, '', 'working', 'ReadWrite', '{"kind":"text"}', 5000, '', 0, 0)`, l)
		if err != nil {
			return nil, err
		}
		ids[i], _ = res.LastInsertId()
	}
	return ids, nil
}

func (s *schemaSQL) append(ctx context.Context, id int64, rendered string, data []byte) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	last := s.last[id]
	now := time.Now().UnixNano()
	var snap int64
	if err := tx.QueryRowContext(ctx, `UPDATE blocks SET last_seq = ?, rendered = ?, heads = 'h', updated_at = ? WHERE id = ? AND last_seq = ? RETURNING snapshot_seq`,
		last+1, rendered, now, id, last).Scan(&snap); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO block_updates (block_id, seq, epoch, actor, data, created_at) VALUES (?, ?, 0, 'agent', ?, ?)`,
		id, last+1, data, now); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.last[id] = last + 1
	return nil
}

// benchAppend: comparison 3, write-through append vs a bare INSERT.
func benchAppend(ctx context.Context, cfg config, tmp string, r *report) error {
	const sec = "append"
	const agent = "agent"
	st, err := memory.Open(ctx, filepath.Join(tmp, "append.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	bare, err := openBare(ctx, filepath.Join(tmp, "append-bare.db"))
	if err != nil {
		return err
	}
	defer bare.db.Close()
	diag, err := openSchemaSQL(ctx, filepath.Join(tmp, "append-schema.db"), false)
	if err != nil {
		return err
	}
	defer diag.db.Close()
	diagNoFTS, err := openSchemaSQL(ctx, filepath.Join(tmp, "append-schema-nofts.db"), true)
	if err != nil {
		return err
	}
	defer diagNoFTS.db.Close()

	var eLat, bLat, dLat, nLat, cLat []latency
	var eOps, bOps []float64
	var payload, nblocks, nops int
	blockBase := 0 // bare block ids: unique across repeats
	for rep := range cfg.repeats {
		p, err := newAppendPlan(fmt.Sprintf("r%d", rep), cfg.appendOps, uint64(100+rep))
		if err != nil {
			return err
		}
		for _, l := range p.labels {
			if _, err := st.Agent(agent).CreateBlock(ctx, memory.BlockSpec{Label: l}); err != nil {
				return err
			}
		}
		ids, err := diag.createBlocks(ctx, p.labels)
		if err != nil {
			return err
		}
		if _, err := diagNoFTS.createBlocks(ctx, p.labels); err != nil {
			return err
		}
		rendered := make([]string, len(p.labels))
		renderedAt := make([]string, len(p.ops)) // the block's text after op i
		for i, op := range p.ops {
			rendered[op.block] += op.text
			renderedAt[i] = rendered[op.block]
			payload += len(op.data)
		}
		nblocks += len(p.labels)
		nops += len(p.ops)
		cLat = append(cLat, latencyOf(p.crdt))

		// engram
		ds := make([]time.Duration, len(p.ops))
		t0 := time.Now()
		for i, op := range p.ops {
			t := time.Now()
			if err := st.Agent(agent).Block(p.labels[op.block]).Append(ctx, op.text); err != nil {
				return fmt.Errorf("engram append %d: %w", i, err)
			}
			ds[i] = time.Since(t)
		}
		eOps = append(eOps, float64(len(p.ops))/time.Since(t0).Seconds())
		eLat = append(eLat, latencyOf(ds))

		// bare INSERT of the same change bytes
		seq := make([]int, len(p.labels))
		t0 = time.Now()
		for i, op := range p.ops {
			seq[op.block]++
			t := time.Now()
			if err := bare.insert(ctx, blockBase+op.block, seq[op.block], op.data); err != nil {
				return fmt.Errorf("bare insert %d: %w", i, err)
			}
			ds[i] = time.Since(t)
		}
		bOps = append(bOps, float64(len(p.ops))/time.Since(t0).Seconds())
		bLat = append(bLat, latencyOf(ds))
		blockBase += len(p.labels)

		// the store's SQL without the store, with and without FTS5
		for _, v := range []struct {
			s   *schemaSQL
			out *[]latency
		}{{diag, &dLat}, {diagNoFTS, &nLat}} {
			for i, op := range p.ops {
				t := time.Now()
				if err := v.s.append(ctx, ids[op.block], renderedAt[i], op.data); err != nil {
					return fmt.Errorf("schema sql append %d: %w", i, err)
				}
				ds[i] = time.Since(t)
			}
			*v.out = append(*v.out, latencyOf(ds))
		}
	}
	e, b, d, nf, cr := medianLatency(eLat), medianLatency(bLat), medianLatency(dLat), medianLatency(nLat), medianLatency(cLat)
	info := fmt.Sprintf("%d appends over %d blocks ≤5,000 chars, change %d B avg",
		nops/cfg.repeats, nblocks/cfg.repeats, payload/max(nops, 1))
	r.latency(sec, "append p50: engram AppendToBlock vs bare INSERT (same bytes)", e, b, info)
	r.compare(sec, "append serial throughput: engram vs bare INSERT", median(eOps), median(bOps), unitOps, "higher", "includes compaction every 128 updates")
	r.latency(sec, "append p50: engram vs the store's SQL alone (diagnostic)", e, d,
		"same SQL on engram's schema: checked rendering update (marks the block for FTS5 re-index) + update insert")
	r.time(sec, "append p50: store's SQL, FTS5 trigger on vs off (diagnostic)", d.p50, nf.p50, "the trigger marking the block for a deferred FTS5 re-index (run before the next search, not per write)")
	r.time(sec, "append p50: store's SQL without FTS5 vs bare INSERT (diagnostic)", nf.p50, b.p50, "rendering copy + one more statement per transaction")
	r.latency(sec, "append p50: the CRDT work alone vs bare INSERT (diagnostic)", cr, b,
		"the same appends on standalone blocks.Documents: AppendText (automerge splice + commit), PendingChanges, MarkPersisted, Render; no store")

	// Durable throughput under concurrent writers: each writer appends to
	// its own blocks (agents writing their own memory at the same time).
	w, per := cfg.appendWriters, max(1, cfg.appendConcOps/cfg.appendWriters)
	eC, bC, err := concurrentAppends(ctx, cfg, st, agent, "c", blockBase, func(block, seq int, data []byte) error {
		return bare.insert(ctx, block, seq, data)
	})
	if err != nil {
		return err
	}
	r.compare(sec, fmt.Sprintf("append durable throughput, %d writers: engram vs bare INSERT", w), median(eC), median(bC), unitOps, "higher",
		fmt.Sprintf("%d appends per repeat, each writer its own blocks; one SQLite writer connection on both sides", w*per))

	// A small append's p99 beside another process appending 256 KiB
	// chunks to blocks of its own in the same file.
	quiet, loaded, appends, err := bigWriterP99(ctx, cfg, filepath.Join(tmp, "bigwriter.db"))
	if err != nil {
		return fmt.Errorf("small append beside a 256 KiB writer: %w", err)
	}
	r.compare(sec, "SQLite small append p99 beside a 256 KiB-chunk writer vs quiet", median(loaded), median(quiet), unitMS, "lower",
		fmt.Sprintf("%d appends of a line to one block; the writer, another process, appends 256 KiB chunks to its own blocks in the same file", appends))
	return nil
}

// concurrentAppends measures durable append throughput under
// cfg.appendWriters concurrent writers, each on its own blocks: through st
// (as agent), then through insert, the bare baseline, with the same
// changes (bare block numbers start at base). It returns ops/s per repeat
// for both.
func concurrentAppends(ctx context.Context, cfg config, st *memory.Store, agent, prefix string, base int,
	insert func(block, seq int, data []byte) error) (engram, bare []float64, err error) {
	w := cfg.appendWriters
	per := max(1, cfg.appendConcOps/w)
	for rep := range cfg.repeats {
		plans := make([]*appendPlan, w)
		for i := range plans {
			if plans[i], err = newAppendPlan(fmt.Sprintf("%s%d-w%d", prefix, rep, i), per, uint64(1000+rep*w+i)); err != nil {
				return nil, nil, err
			}
			for _, l := range plans[i].labels {
				if _, err := st.Agent(agent).CreateBlock(ctx, memory.BlockSpec{Label: l}); err != nil {
					return nil, nil, err
				}
			}
		}
		run := func(f func(wi int, p *appendPlan) error) (float64, error) {
			var wg sync.WaitGroup
			errs := make([]error, w)
			t0 := time.Now()
			for i := range w {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = f(i, plans[i])
				}()
			}
			wg.Wait()
			el := time.Since(t0)
			if err := errors.Join(errs...); err != nil {
				return 0, err
			}
			return float64(w*per) / el.Seconds(), nil
		}
		ops, err := run(func(_ int, p *appendPlan) error {
			for _, op := range p.ops {
				if err := st.Agent(agent).Block(p.labels[op.block]).Append(ctx, op.text); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("engram concurrent append: %w", err)
		}
		engram = append(engram, ops)
		offs := make([]int, w)
		for i, p := range plans {
			offs[i] = base
			base += len(p.labels)
		}
		ops, err = run(func(wi int, p *appendPlan) error {
			seq := map[int]int{}
			for _, op := range p.ops {
				seq[op.block]++
				if err := insert(offs[wi]+op.block, seq[op.block], op.data); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("bare concurrent insert: %w", err)
		}
		bare = append(bare, ops)
	}
	return engram, bare, nil
}
