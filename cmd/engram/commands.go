package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/redact"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/interop/letta"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
	"github.com/engram-go/engram/workspace"
)

type blockJSON struct {
	Owner       string          `json:"owner"`
	Label       string          `json:"label"`
	Type        string          `json:"type"`
	Permission  string          `json:"permission"`
	Description string          `json:"description,omitempty"`
	Pinned      bool            `json:"pinned,omitempty"`
	SharedFrom  string          `json:"shared_from,omitempty"`
	Chars       int             `json:"chars"`
	CharLimit   int             `json:"char_limit"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Rendered    string          `json:"rendered,omitempty"`
	Value       any             `json:"value,omitempty"`
	History     []blocks.Change `json:"history,omitempty"`
	Heads       []string        `json:"heads,omitempty"`
}

func metaJSON(m memory.BlockMeta) blockJSON {
	sj, _ := schema.Marshal(m.Schema)
	return blockJSON{Owner: m.Owner, Label: m.Label, Type: string(m.Type), Permission: m.Permission.String(),
		Description: m.Description, Pinned: m.Pinned, SharedFrom: m.SharedFrom, Chars: len([]rune(m.Rendered)),
		CharLimit: m.CharLimit, Schema: sj}
}

func cmdBlocksList(fs *flag.FlagSet) runFunc {
	var agent string
	var shared bool
	fs.StringVar(&agent, "agent", "", "agent id")
	fs.BoolVar(&shared, "shared", false, "blocks shared with the agent")
	return func(ctx context.Context, a *app, _ []string) error {
		if err := need("blocks list", "--agent", agent); err != nil {
			return err
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		var metas []memory.BlockMeta
		if shared {
			sb, err := s.Agent(agent).SharedBlocks(ctx)
			if err != nil {
				return err
			}
			for _, b := range sb {
				metas = append(metas, b.BlockMeta)
			}
		} else if metas, err = s.Agent(agent).Blocks(ctx); err != nil {
			return err
		}
		out := make([]blockJSON, 0, len(metas))
		for _, m := range metas {
			out = append(out, metaJSON(m))
		}
		return a.output(out, func(w io.Writer) {
			var rows [][]string
			for _, b := range out {
				owner := b.Owner
				if b.SharedFrom != "" {
					owner = "shared from " + b.SharedFrom
				}
				pinned := ""
				if b.Pinned {
					pinned = "pinned"
				}
				rows = append(rows, []string{b.Label, b.Type, b.Permission, fmt.Sprintf("%d/%d", b.Chars, b.CharLimit), pinned, owner})
			}
			a.table("LABEL\tTYPE\tPERMISSION\tCHARS\tPINNED\tOWNER", rows)
		})
	}
}

func cmdBlockShow(fs *flag.FlagSet) runFunc {
	var agent, owner string
	var history, raw bool
	fs.StringVar(&agent, "agent", "", "agent id")
	fs.StringVar(&owner, "owner", "", "owner of a shared block")
	fs.BoolVar(&history, "history", false, "show the change history")
	fs.BoolVar(&raw, "raw", false, "show the raw value as JSON")
	return func(ctx context.Context, a *app, pos []string) error {
		if err := need("block show", "--agent", agent); err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageErrorf("block show: want one LABEL, got %d argument(s) (run \"engram block show --help\")", len(pos))
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		if owner == "" {
			owner = agent
		}
		h := s.Agent(agent).Shared(owner, pos[0])
		doc, err := h.Doc(ctx)
		if err != nil {
			return fmt.Errorf("block show: block %q of %q as %q: %w", pos[0], owner, agent, err)
		}
		info := doc.Info()
		sj, _ := schema.Marshal(info.Schema)
		out := blockJSON{Owner: info.Owner, Label: info.Label, Type: string(info.Type), Permission: doc.Permission().String(),
			Description: info.Description, Pinned: info.Pinned, Chars: doc.Size(), CharLimit: doc.CharLimit(), Schema: sj,
			Rendered: doc.Render(), Heads: doc.Heads()}
		if raw || a.json {
			if out.Value, err = doc.Value(); err != nil {
				return err
			}
		}
		if history || a.json {
			// The store's history spans the block's epochs.
			if out.History, err = h.History(ctx); err != nil {
				return err
			}
		}
		return a.output(out, func(w io.Writer) {
			fmt.Fprintf(w, "block %s (owner %s, %s, %s, %d/%d chars)\n", out.Label, out.Owner, out.Type, out.Permission, out.Chars, out.CharLimit)
			if out.Description != "" {
				fmt.Fprintf(w, "description: %s\n", out.Description)
			}
			fmt.Fprintf(w, "schema: %s\n\n%s\n", sj, out.Rendered)
			if raw {
				b, _ := json.MarshalIndent(out.Value, "", "  ")
				fmt.Fprintf(w, "\nraw value:\n%s\n", b)
			}
			if history {
				fmt.Fprintln(w, "\nhistory:")
				var rows [][]string
				for _, c := range out.History {
					target := c.Section
					if c.Field != "" {
						target = strings.Trim(target+"."+c.Field, ".")
					}
					rows = append(rows, []string{c.Time.Format(time.RFC3339), c.Actor, string(c.Op), target, c.Hash[:12], fmt.Sprint(c.Epoch)})
				}
				a.table("TIME\tACTOR\tOP\tTARGET\tCHANGE\tEPOCH", rows)
			}
		})
	}
}

func cmdBlockCreate(fs *flag.FlagSet) runFunc {
	var agent, label, typ, perm, schemaJSON, desc, value string
	var limit, priority int
	var pinned bool
	fs.StringVar(&agent, "agent", "", "owner agent id")
	fs.StringVar(&label, "label", "", "block label")
	fs.StringVar(&typ, "type", "working", "core, working, archival or log")
	fs.StringVar(&perm, "perm", "ReadWrite", "the owner's permission: ReadOnly, Partner, Human, Append, ReadWrite or Admin")
	fs.StringVar(&schemaJSON, "schema", `{"kind":"text"}`, "schema JSON (see package schema)")
	fs.StringVar(&desc, "desc", "", "description")
	fs.StringVar(&value, "value", "", `initial text (text blocks) or JSON value; "-" reads stdin, "@FILE" a file`)
	fs.IntVar(&limit, "limit", 0, "character limit (default 5000)")
	fs.IntVar(&priority, "priority", 0, "pruning priority (higher is dropped first)")
	fs.BoolVar(&pinned, "pinned", false, "pin a working block into context")
	return func(ctx context.Context, a *app, _ []string) error {
		if err := need("block create", "--agent", agent); err != nil {
			return err
		}
		if err := need("block create", "--label", label); err != nil {
			return err
		}
		t, err := blocks.ParseType(typ)
		if err != nil {
			return err
		}
		p, err := blocks.ParsePermission(perm)
		if err != nil {
			return err
		}
		sc, err := schema.Unmarshal([]byte(schemaJSON))
		if err != nil {
			return usageErrorf("block create: --schema %s: %v (kinds: %s, %s, %s, %s, %s; see package schema)", schemaJSON, err,
				schema.KindText, schema.KindMap, schema.KindList, schema.KindLog, schema.KindComposite)
		}
		spec := memory.BlockSpec{Label: label, Description: desc, Type: t, Schema: sc, Permission: p, CharLimit: limit, Pinned: pinned, Priority: priority}
		if value, err = a.text(value); err != nil {
			return fmt.Errorf("block create: --value: %w", err)
		}
		if value != "" {
			if sc.Kind() == schema.KindText {
				spec.Value = value
			} else if err := json.Unmarshal([]byte(value), &spec.Value); err != nil {
				return fmt.Errorf("block create: --value for a %s block must be JSON: %w", sc.Kind(), err)
			}
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		blk, err := s.Agent(agent).CreateBlock(ctx, spec)
		if err != nil {
			return err
		}
		rendered, err := blk.Render(ctx)
		if err != nil {
			return err
		}
		return a.output(map[string]any{"created": label, "owner": agent, "rendered": rendered}, func(w io.Writer) {
			fmt.Fprintf(w, "created block %s for %s\n", label, agent)
		})
	}
}

func cmdBlockWrite(op blocks.Op) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		var agent, owner string
		var asAgent bool
		name := "block " + map[blocks.Op]string{blocks.OpSetText: "set", blocks.OpAppendText: "append"}[op]
		fs.StringVar(&agent, "agent", "", "agent id (the owner, or with --owner the agent the block is shared with)")
		fs.StringVar(&owner, "owner", "", "owner of a block shared with --agent: the write goes through the share, at its permission (implies --as-agent)")
		fs.BoolVar(&asAgent, "as-agent", false, "write as the agent (its permission applies) instead of as the system")
		return func(ctx context.Context, a *app, pos []string) error {
			var err error
			if err := need(name, "--agent", agent); err != nil {
				return err
			}
			if len(pos) != 2 {
				return usageErrorf("%s: want LABEL TEXT, got %d argument(s) (run \"engram %s --help\")", name, len(pos), name)
			}
			if pos[1], err = a.text(pos[1]); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if owner == "" {
				owner = agent
			}
			s, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer a.close()
			h := s.Agent(agent).Shared(owner, pos[0])
			if asAgent || owner != agent {
				err = h.Apply(ctx, memory.Edit{Op: op, Text: pos[1]})
			} else {
				var doc *blocks.Document
				if doc, err = s.Agent(agent).Block(pos[0]).Doc(ctx); err == nil {
					if op == blocks.OpSetText {
						err = doc.SetText(pos[1], blocks.System)
					} else {
						err = doc.AppendText(pos[1], blocks.System)
					}
					if err == nil {
						err = s.Agent(agent).Block(pos[0]).Persist(ctx)
					}
				}
			}
			// A Partner or Human edit kept as a proposal succeeded: it waits
			// for a person (engram proposals approve ID).
			if pe := (*memory.ProposalError)(nil); errors.As(err, &pe) {
				return a.output(map[string]any{"label": pos[0], "owner": owner, "proposal": pe.ProposalID, "status": "pending"}, func(w io.Writer) {
					fmt.Fprintf(w, "proposal #%d queued for approval (engram proposals approve %d)\n", pe.ProposalID, pe.ProposalID)
				})
			}
			if err != nil {
				return fmt.Errorf("%s: block %q of %q as %q: %w", name, pos[0], owner, agent, err)
			}
			r, err := h.Render(ctx)
			if err != nil {
				return err
			}
			return a.output(map[string]any{"label": pos[0], "owner": owner, "rendered": r}, func(w io.Writer) { fmt.Fprintln(w, r) })
		}
	}
}

func cmdShare(fs *flag.FlagSet) runFunc {
	var owner, label, with, perm string
	var revoke bool
	fs.StringVar(&owner, "owner", "", "owner agent id")
	fs.StringVar(&label, "label", "", "block label")
	fs.StringVar(&with, "with", "", "agent to share with")
	fs.StringVar(&perm, "perm", "Append", "permission granted: ReadOnly, Partner, Human, Append, ReadWrite or Admin")
	fs.BoolVar(&revoke, "revoke", false, "revoke the share instead")
	return func(ctx context.Context, a *app, _ []string) error {
		for what, v := range map[string]string{"--owner": owner, "--label": label, "--with": with} {
			if err := need("share", what, v); err != nil {
				return err
			}
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		if revoke {
			if err := s.Agent(owner).Block(label).Unshare(ctx, with); err != nil {
				return err
			}
			return a.output(map[string]any{"revoked": label, "from": with}, func(w io.Writer) {
				fmt.Fprintf(w, "block %s of %s no longer shared with %s\n", label, owner, with)
			})
		}
		p, err := blocks.ParsePermission(perm)
		if err != nil {
			return err
		}
		if err := s.Agent(owner).Block(label).Share(ctx, with, p); err != nil {
			return err
		}
		return a.output(map[string]any{"shared": label, "owner": owner, "with": with, "permission": p.String()}, func(w io.Writer) {
			fmt.Fprintf(w, "block %s of %s shared with %s (%s)\n", label, owner, with, p)
		})
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// conversationKeysHelp says which metadata keys name an archival entry's
// conversation (SQLite migration 0028, PostgreSQL 0025), and how entries
// naming none are neighbours (SQLite 0032, PostgreSQL 0029;
// docs/retrieval.md).
const conversationKeysHelp = `metadata as a JSON object. The first of "conversation", "conversation_id", ` +
	`"session", "session_id", "thread", "thread_id" holding a string other than "" or a number names the ` +
	`entry's conversation (3 and "3" are two): the entry is then also found by the words of the entries ` +
	`written before and after it in that conversation. An entry naming none is found by the words of the ` +
	`entries naming none written just before and after it, each when written 1 second to 30 minutes from it ` +
	`(entries written at once, as by archival load, or further apart are indexed alone). Values are ` +
	`searchable; a string beginning with an ISO date ("date": "2023-05-08") is found by "8 May 2023" too`

func cmdArchivalAdd(fs *flag.FlagSet) runFunc {
	var agent, tags, meta string
	fs.StringVar(&agent, "agent", "", "agent id")
	fs.StringVar(&tags, "tags", "", "comma-separated tags")
	fs.StringVar(&meta, "meta", "", conversationKeysHelp)
	return func(ctx context.Context, a *app, pos []string) error {
		if err := need("archival add", "--agent", agent); err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageErrorf("archival add: want one TEXT")
		}
		var metadata map[string]any
		if meta != "" {
			if err := json.Unmarshal([]byte(meta), &metadata); err != nil || metadata == nil {
				return usageErrorf("archival add: --meta wants a JSON object: %q", meta)
			}
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		content, err := a.text(pos[0])
		if err != nil {
			return fmt.Errorf("archival add: %w", err)
		}
		e, err := s.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: content, Tags: splitList(tags), Metadata: metadata})
		if err != nil {
			return err
		}
		return a.output(e, func(w io.Writer) {
			if e.Duplicate {
				fmt.Fprintf(w, "archival entry %d already holds this text: tags and metadata merged into it\n", e.ID)
				return
			}
			fmt.Fprintf(w, "archival entry %d added\n", e.ID)
		})
	}
}

// archivalLine is one line of "archival load" input.
type archivalLine struct {
	Content  string         `json:"content"`
	Tags     []string       `json:"tags"`
	Metadata map[string]any `json:"metadata"`
}

// cmdArchivalLoad stores many entries from JSON Lines through
// InsertArchivalBatch: every line is parsed and checked before anything is
// written.
func cmdArchivalLoad(fs *flag.FlagSet) runFunc {
	var agent, in, tags string
	var size int
	fs.StringVar(&agent, "agent", "", "agent id")
	fs.StringVar(&in, "in", "", `JSON Lines file, one {"content": …, "tags": […], "metadata": {…}} per line (default: stdin)`)
	fs.StringVar(&tags, "tags", "", "comma-separated tags added to every entry")
	fs.IntVar(&size, "batch", 0, "entries per transaction (0: the store's default, 1000)")
	return func(ctx context.Context, a *app, _ []string) error {
		if err := need("archival load", "--agent", agent); err != nil {
			return err
		}
		if size < 0 {
			return fmt.Errorf("archival load: --batch %d: want a positive number of entries per transaction (or 0 for the default)", size)
		}
		r := a.stdin
		if in != "" {
			f, err := os.Open(in)
			if err != nil {
				return fmt.Errorf("archival load: %w", err)
			}
			defer f.Close()
			r = f
		}
		var entries []memory.ArchivalEntry
		var lines []int // entries[i] is on line lines[i]
		extra := splitList(tags)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var l archivalLine
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&l); err != nil {
				return fmt.Errorf("archival load: line %d: %w", n, err)
			}
			entries = append(entries, memory.ArchivalEntry{Content: l.Content, Tags: append(l.Tags, extra...), Metadata: l.Metadata})
			lines = append(lines, n)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("archival load: %w", err)
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		out, err := s.Agent(agent).Archival().InsertBatch(ctx, entries, &memory.BatchOptions{Size: size, Progress: a.progress("loading")})
		if ee := (*memory.EntryError)(nil); errors.As(err, &ee) && ee.Index < len(lines) {
			return fmt.Errorf("archival load: line %d: %w (nothing was stored)", lines[ee.Index], ee.Err)
		}
		if err != nil {
			return err
		}
		return a.output(map[string]any{"agent": agent, "stored": len(out)}, func(w io.Writer) {
			fmt.Fprintf(w, "%d archival entries loaded for %s\n", len(out), agent)
		})
	}
}

func cmdArchivalList(fs *flag.FlagSet) runFunc {
	var agent, tags string
	var limit int
	var superseded bool
	fs.StringVar(&agent, "agent", "", "agent id")
	fs.StringVar(&tags, "tags", "", "only entries with any of these tags")
	fs.IntVar(&limit, "limit", 50, "most entries")
	fs.BoolVar(&superseded, "superseded", false, "include superseded entries")
	return func(ctx context.Context, a *app, _ []string) error {
		if err := need("archival list", "--agent", agent); err != nil {
			return err
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		es, err := s.Agent(agent).Archival().List(ctx, &memory.ArchivalQuery{Limit: limit, Tags: splitList(tags), IncludeSuperseded: superseded})
		if err != nil {
			return err
		}
		return a.output(es, func(w io.Writer) {
			var rows [][]string
			for _, e := range es {
				rows = append(rows, []string{strconv.FormatInt(e.ID, 10), e.CreatedAt.Format(time.RFC3339), strings.Join(e.Tags, ","), oneLine(e.Content, 70)})
			}
			a.table("ID\tCREATED\tTAGS\tCONTENT", rows)
		})
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func cmdSearch(fs *flag.FlagSet) runFunc {
	var agent, mode, types string
	var all bool
	var limit int
	var weight string // unset: Hybrid's plain RRF, Auto's embedder weight
	fs.StringVar(&weight, "vector-weight", "", "weight of the vector side in rank fusion (default: 1 for hybrid, the embedder's for auto)")
	fs.StringVar(&agent, "agent", "", "search as this agent")
	fs.BoolVar(&all, "all", false, "search every agent's memory (system view)")
	fs.StringVar(&mode, "mode", "auto", "auto, fts, vector or hybrid")
	fs.StringVar(&types, "types", "", "comma-separated: blocks, archival, messages (default all)")
	fs.IntVar(&limit, "limit", 10, "most results")
	return func(ctx context.Context, a *app, pos []string) error {
		if len(pos) != 1 {
			return usageErrorf("search: want one QUERY")
		}
		if agent == "" && !all {
			return usageErrorf("search: --agent or --all is required")
		}
		m, err := search.ParseMode(mode)
		if err != nil {
			return err
		}
		a.needVectors, a.searches = m == search.Vector || m == search.Hybrid, true
		opts := search.NewOptions().Mode(m).Limit(limit)
		if weight != "" {
			w, err := strconv.ParseFloat(weight, 64)
			if err != nil {
				return fmt.Errorf("search: --vector-weight %q is not a number", weight)
			}
			opts.VectorWeight(w)
		}
		if types != "" {
			var cts []search.ContentType
			for _, t := range splitList(types) {
				ct, err := search.ParseContentType(t)
				if err != nil {
					return err
				}
				cts = append(cts, ct)
			}
			opts = opts.ContentTypes(cts...)
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		var res []search.Result
		if all {
			res, err = s.SearchAll(ctx, pos[0], opts)
		} else {
			res, err = s.Agent(agent).Search(ctx, pos[0], opts)
		}
		if err != nil {
			return err
		}
		return a.output(res, func(w io.Writer) {
			var rows [][]string
			for i, r := range res {
				src := []string{}
				if r.Source.FTSRank > 0 {
					src = append(src, fmt.Sprintf("fts#%d bm25=%.3g", r.Source.FTSRank, r.Source.BM25))
				}
				if r.Source.VectorRank > 0 {
					src = append(src, fmt.Sprintf("vec#%d dist=%.3f", r.Source.VectorRank, r.Source.Distance))
				}
				if r.Source.FTSNorm > 0 {
					src = append(src, fmt.Sprintf("norm=%.3f", r.Source.FTSNorm))
				}
				if r.Source.Fused > 0 {
					src = append(src, fmt.Sprintf("rrf=%.4f", r.Source.Fused))
				}
				if r.Source.RerankRank > 0 {
					src = append(src, fmt.Sprintf("rerank#%d=%.3g", r.Source.RerankRank, r.Source.Rerank))
				}
				what := r.Type.String() + " " + strconv.FormatInt(r.ID, 10)
				if r.Label != "" {
					what = "block " + r.Label
				}
				rows = append(rows, []string{strconv.Itoa(i + 1), fmt.Sprintf("%.4f", r.Score), strings.Join(src, " "), r.Owner, what, oneLine(r.Snippet, 60)})
			}
			a.table("#\tSCORE\tSOURCE\tOWNER\tWHAT\tSNIPPET", rows)
		})
	}
}

func cmdFilesIO(imp bool) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		name := map[bool]string{true: "files import", false: "files export"}[imp]
		var agent string
		var dryRun bool
		fs.StringVar(&agent, "agent", "", "agent id")
		if imp {
			fs.BoolVar(&dryRun, "dry-run", false, "only say which blocks the files would create and replace")
		}
		return func(ctx context.Context, a *app, pos []string) error {
			var err error
			if err := need(name, "--agent", agent); err != nil {
				return err
			}
			if len(pos) != 1 {
				return usageErrorf("%s: want one DIR", name)
			}
			var plan []workspace.File
			if imp {
				// The files are read and checked as the import reads them
				// before the store is opened: a plan names what the import
				// would do, or fails as it would.
				if plan, err = workspace.Plan(pos[0]); err != nil {
					return err
				}
			}
			var s *memory.Store
			if dryRun && storeMissing(a.db) {
				// A plan writes nothing, and needs no store to exist: every
				// file would create its block.
			} else {
				if dryRun {
					a.readOnly = true
				}
				if s, err = a.open(ctx); err != nil {
					return err
				}
				defer a.close()
			}
			var rep workspace.Report
			if imp {
				replaced, created, perr := workspacePlan(ctx, s, agent, plan)
				if perr != nil {
					return perr
				}
				verb := "replacing"
				if dryRun {
					verb = "would replace"
				}
				for _, r := range replaced {
					fmt.Fprintf(a.stderr, "engram: files import: %s block %s of %s (%d chars) with %s; its old text stays in its history (engram block show --history --agent %s %s)\n",
						verb, r.label, agent, r.chars, r.path, agent, r.label)
				}
				if dryRun {
					return a.output(map[string]any{"replace": replaced, "create": created}, func(w io.Writer) {
						for _, c := range created {
							fmt.Fprintf(w, "would create %s from %s\n", c.label, c.path)
						}
						for _, r := range replaced {
							fmt.Fprintf(w, "would replace %s from %s\n", r.label, r.path)
						}
					})
				}
				rep, err = workspace.Import(ctx, s.Agent(agent), pos[0])
			} else {
				rep, err = workspace.Export(ctx, s.Agent(agent), pos[0])
			}
			if err != nil {
				return err
			}
			return a.output(rep, func(w io.Writer) {
				for _, l := range rep.Created {
					fmt.Fprintf(w, "created  %s\n", l)
				}
				for _, l := range rep.Updated {
					fmt.Fprintf(w, "updated  %s\n", l)
				}
				for _, p := range rep.Written {
					fmt.Fprintf(w, "wrote    %s\n", p)
				}
				for _, p := range rep.Skipped {
					fmt.Fprintf(w, "skipped  %s (absent)\n", p)
				}
			})
		}
	}
}

func cmdExport(fs *flag.FlagSet) runFunc {
	var agent, out, format string
	fs.StringVar(&agent, "agent", "", "only this agent; with --format letta, comma-separated agents (default: everything)")
	fs.StringVar(&out, "out", "", "file, written 0600 and replaced atomically (a link there is replaced, not followed) (default: stdout)")
	fs.StringVar(&format, "format", "engram", "engram (a lossless dump) or letta (a Letta agent file, .af: what it cannot hold is reported on stderr)")
	return func(ctx context.Context, a *app, _ []string) error {
		switch format {
		case "engram", "letta":
		default:
			return usageErrorf("export: --format %q: want engram or letta", format)
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		var (
			v    any
			rep  *letta.Report
			what string
		)
		if format == "letta" {
			agents := splitList(agent)
			if len(agents) == 0 {
				if agents, err = s.Admin().Agents(ctx); err != nil {
					return err
				}
			}
			f, r, err := letta.Export(ctx, s, agents, nil)
			if err != nil {
				return err
			}
			v, rep, what = f, r, fmt.Sprintf("%d agents, %d blocks, %d tools", len(f.Agents), len(f.Blocks), len(f.Tools))
		} else {
			var d *memory.Dump
			if agent == "" {
				d, err = s.Export(ctx)
			} else {
				d, err = s.Agent(agent).Export(ctx)
			}
			if err != nil {
				return err
			}
			v, what = d, fmt.Sprintf("%d blocks, %d archival entries, %d messages", len(d.Blocks), len(d.Archival), len(d.Messages))
		}
		write := func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		if out == "" {
			if err := write(a.stdout); err != nil {
				return err
			}
		} else {
			if err := writeFileAtomic(out, write); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			fmt.Fprintf(a.stderr, "exported %s to %s\n", what, out)
		}
		if rep != nil {
			rep.Write(a.stderr)
		}
		return nil
	}
}

func cmdImport(fs *flag.FlagSet) runFunc {
	var in, agent string
	fs.StringVar(&in, "in", "", "file: an engram export or a Letta agent file (.af), told apart by content (default: stdin)")
	fs.StringVar(&agent, "agent", "", "a Letta agent file's only agent gets this id (default: its name)")
	var uncapped bool
	fs.BoolVar(&uncapped, "no-caps", false, "import archival entries and messages past the per-entry caps (1 MiB of content, 64 KiB of metadata, 64 tags of 256 bytes, 1 MiB a message), such as a store with larger caps exported")
	return func(ctx context.Context, a *app, _ []string) error {
		if uncapped {
			a.uncapped = true
		}
		r := a.stdin
		if in != "" {
			f, err := os.Open(in)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return fmt.Errorf("import: read %s: %w", cmp.Or(in, "standard input"), err)
		}
		if letta.IsAgentFile(data) {
			return importLetta(ctx, a, data, agent)
		}
		if agent != "" {
			return usageErrorf("import: --agent names the agent of a Letta agent file; an engram export keeps its agents' ids")
		}
		var d memory.Dump
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("import: neither an engram export nor a Letta agent file: %w", err)
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		rep, err := s.Import(ctx, &d)
		if err != nil {
			return err
		}
		if err := a.embedImported(ctx, rep.Embedder); err != nil {
			return err
		}
		return a.output(rep, func(w io.Writer) {
			fmt.Fprintf(w, "imported %d blocks, %d shares, %d proposals, %d archival entries, %d messages, %d batches, %d summaries, %d library artifacts, %d profiles\n",
				rep.Blocks, rep.Shares, rep.Proposals, rep.Archival, rep.Messages, rep.Batches, rep.Summaries, rep.Library, rep.Profiles)
		})
	}
}

// importLetta imports a Letta agent file and prints its report.
func importLetta(ctx context.Context, a *app, data []byte, agent string) error {
	s, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer a.close()
	rep, err := letta.Import(ctx, s, data, &letta.ImportOptions{Agent: agent})
	if err != nil {
		return err
	}
	if err := a.embedImported(ctx, nil); err != nil {
		return err
	}
	return a.output(rep, func(w io.Writer) {
		rep.Write(w)
		var names []string
		for _, ag := range rep.Agents {
			names = append(names, ag.Agent)
		}
		fmt.Fprintf(w, "imported %d agents in %v; see one with: engram context --agent %s\n", len(rep.Agents), rep.Duration.Round(time.Millisecond), names[0])
	})
}

// embedImported computes the vectors of imported content (a dump holds
// none): with the store's embedder, or, for a store without one, with the
// embedder the dump records, which the store then records too.
func (a *app) embedImported(ctx context.Context, rec *memory.DumpEmbedder) error {
	s := a.store
	if storeaccess.Index(s).Embedder() != nil {
		return s.Reembed(ctx, a.progress("embedding"))
	}
	if rec == nil || a.embedder != "" {
		return nil // none, or --embedder none
	}
	if name, _, err := s.Admin().RecordedEmbedder(ctx); err != nil {
		return err
	} else if name != "" {
		// The store has its embedder, which this environment cannot
		// rebuild (open warned why): the dump's would be refused as a
		// mismatch, after the import committed.
		fmt.Fprintf(a.stderr, "engram: warning: the imported content has no vectors yet: the store's vectors are from %s; "+
			"compute them with it once it is set up (engram reembed)\n", name)
		return nil
	}
	emb, err := embedderNamed(rec.Name, rec.Dimensions)
	if err != nil {
		fmt.Fprintf(a.stderr, "engram: warning: the dump's embedder cannot be rebuilt here (%v); the imported content has no vectors (engram --embedder openai reembed, once set up)\n", err)
		return nil
	}
	if err := a.close(); err != nil {
		return err
	}
	// Opening a store that holds content with its first embedder embeds
	// that content and records the embedder.
	fmt.Fprintf(a.stderr, "embedding the imported content with %s, the dump's embedder\n", rec.Name)
	a.store, err = memory.Open(ctx, a.db, &memory.Options{Embedder: emb, TextCacheBytes: -1, VectorCacheBytes: -1})
	return err
}

func cmdReembed(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, a *app, _ []string) error {
		if a.embedder == "" || a.embedder == "none" {
			return fmt.Errorf("reembed: choose an embedder with --embedder offline|openai")
		}
		a.reembed = true
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		if err := s.Reembed(ctx, a.progress("re-embedding")); err != nil {
			return err
		}
		name := storeaccess.Index(s).Embedder().Name()
		return a.output(map[string]any{"embedder": name}, func(w io.Writer) { fmt.Fprintf(w, "vectors recomputed with %s\n", name) })
	}
}

func cmdCompact(fs *flag.FlagSet) runFunc {
	var agent string
	var rebase bool
	fs.StringVar(&agent, "agent", "", "only this agent")
	fs.BoolVar(&rebase, "rebase", false, "also start each block on a new epoch (its history archived; loads read only the current value)")
	return func(ctx context.Context, a *app, _ []string) error {
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		n, err := s.Admin().Compact(ctx, &memory.CompactOptions{Owner: agent, Rebase: rebase, Progress: a.progress("compacting")})
		if err != nil {
			return err
		}
		return a.output(map[string]any{"compacted": n}, func(w io.Writer) { fmt.Fprintf(w, "compacted %d blocks\n", n) })
	}
}

func cmdStats(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, a *app, _ []string) error {
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		st, err := s.Admin().Stats(ctx)
		if err != nil {
			return err
		}
		n := st.Counts
		stats := map[string]int64{
			"agents": n.Agents, "blocks": n.Blocks, "block_updates": n.BlockUpdates, "shares": n.Shares,
			"archival": n.Archival, "archival_current": n.ArchivalCurrent, "messages": n.Messages, "batches": n.Batches,
			"summaries": n.Summaries, "proposals_pending": n.ProposalsPending, "snapshot_bytes": n.SnapshotBytes,
			"update_bytes": n.UpdateBytes, "archived_epochs": n.ArchivedEpochs, "archive_bytes": n.ArchiveBytes,
		}
		emb := "none"
		if st.Embedder != "" {
			emb = fmt.Sprintf("%s (%d dims)", st.Embedder, st.EmbedderDims)
		}
		vectors := st.VectorEngine
		if vectors == "" {
			vectors = "none in this run (no --embedder)"
		} else if st.VectorEngineReason != "" {
			vectors += " (" + st.VectorEngineReason + ")"
		}
		target := redact.Target(a.db)
		out := map[string]any{"db": target, "backend": st.Backend, "embedder": emb, "vectors": vectors, "counts": stats}
		return a.output(out, func(w io.Writer) {
			fmt.Fprintf(w, "store     %s\nbackend   %s\nembedder  %s (the store's)\nvectors   %s\n", target, st.Backend, emb, vectors)
			var rows [][]string
			for _, k := range []string{"agents", "blocks", "block_updates", "shares", "archival", "archival_current", "messages",
				"batches", "summaries", "proposals_pending", "snapshot_bytes", "update_bytes", "archived_epochs", "archive_bytes"} {
				rows = append(rows, []string{k, strconv.FormatInt(stats[k], 10)})
			}
			a.table("WHAT\tCOUNT", rows)
		})
	}
}

// writeFileAtomic writes path through write without following a link
// there: the data goes to a new temporary file (0600: an export holds every
// agent's memory) in path's directory, which is then renamed over path.
// os.Create(path) truncated the target of a link at path ("export --out
// link.json"); now the link itself is replaced, and a failed export leaves
// any earlier file whole.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		// Not the temporary file's name: the user asked for path.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// fileBlock is a workspace file and the block it becomes.
type fileBlock struct {
	path  string
	label string
	chars int // the block's size now (replaced blocks)
}

// MarshalJSON writes a fileBlock for --dry-run --json.
func (f fileBlock) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"file": f.path, "block": f.label, "chars": f.chars})
}

// workspacePlan says which of the files workspace.Plan found would
// replace one of agent's blocks and which would create one, in the
// import's order. s nil is a store that does not exist yet.
func workspacePlan(ctx context.Context, s *memory.Store, agent string, plan []workspace.File) (replaced, created []fileBlock, err error) {
	have := map[string]int{}
	if s != nil {
		metas, err := s.Agent(agent).Blocks(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range metas {
			have[m.Label] = len([]rune(m.Rendered))
		}
	}
	for _, pf := range plan {
		f := fileBlock{path: pf.Path, label: pf.Label}
		if n, ok := have[f.label]; ok {
			f.chars = n
			replaced = append(replaced, f)
		} else {
			created = append(created, f)
		}
	}
	return replaced, created, nil
}

// storeMissing reports whether db names a SQLite file that does not exist.
func storeMissing(db string) bool {
	path, ok := memory.SQLitePath(db)
	if !ok || path == ":memory:" {
		return false
	}
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

const blockDeleteHelp = `Deletes the block, its history and its shares. As the system (the default)
it deletes whatever the agent's permission on the block; with --as-agent the
agent deletes it, which needs Admin on the block (a block created at the
default ReadWrite cannot delete itself).`

func cmdBlockDelete(fs *flag.FlagSet) runFunc {
	var agent string
	var asAgent bool
	fs.StringVar(&agent, "agent", "", "agent id: the block's owner")
	fs.BoolVar(&asAgent, "as-agent", false, "delete as the agent (needs Admin on the block) instead of as the system")
	return func(ctx context.Context, a *app, pos []string) error {
		if err := need("block delete", "--agent", agent); err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageErrorf("block delete: want LABEL, got %d argument(s) (run \"engram block delete --help\")", len(pos))
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		if asAgent {
			err = s.Agent(agent).Block(pos[0]).Delete(ctx)
		} else {
			err = s.Admin().DeleteBlock(ctx, agent, pos[0])
		}
		if err != nil {
			return fmt.Errorf("block delete: block %q of %q: %w", pos[0], agent, err)
		}
		return a.output(map[string]any{"label": pos[0], "owner": agent, "deleted": true}, func(w io.Writer) {
			fmt.Fprintf(w, "deleted block %q of %q\n", pos[0], agent)
		})
	}
}
