package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/cmd/engram/internal/mcpguard"
	"github.com/engram-go/engram/cmd/engram/internal/ui"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/tools"
)

// version is reported to MCP clients.
const version = "0.1.0"

func cmdMCP(fs *flag.FlagSet) runFunc {
	var agent string
	fs.StringVar(&agent, "agent", "", "agent id the tools act as")
	return func(ctx context.Context, a *app, _ []string) error {
		if err := need("mcp", "--agent", agent); err != nil {
			return err
		}
		a.serving = true // many searches: keep the full-text index in memory
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		srv, listed, err := newMCPServerListed(s, agent)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go watchResources(ctx, srv, s, agent, listed, resourcePoll)
		return srv.Run(ctx, &framedTransport{r: a.stdin, w: a.stdout})
	}
}

// resourcePoll is how often the server checks whether the agent's blocks
// or shares changed (one indexed query: memory.Agent.BlocksStamp), in this
// process or another on the same store.
const resourcePoll = 500 * time.Millisecond

// newMCPServer exposes agent's memory tools as MCP tools and its blocks
// (own and shared) as MCP resources engram://<owner>/<label>.
func newMCPServer(store *memory.Store, agent string) (*mcp.Server, error) {
	srv, _, err := newMCPServerListed(store, agent)
	return srv, err
}

// resourceList is what the server lists as resources, and the agent's
// BlocksStamp read before that listing (see watchResources).
type resourceList struct {
	uris  map[string]listedBlock // URI → what was listed
	stamp memory.BlocksStamp
}

// listedBlock is what the server last saw of a listed block: its
// description, and a digest of its rendered content, to tell subscribers
// when it changed.
type listedBlock struct {
	desc    string
	content [sha256.Size]byte
}

// newMCPServerListed is newMCPServer, also returning the resource list it
// made, for watchResources to start from (listing again would announce
// every resource as changed).
func newMCPServerListed(store *memory.Store, agent string) (*mcp.Server, resourceList, error) {
	return newMCPServerOnly(store, agent, nil, nil)
}

// newMCPServerOnly is newMCPServerListed with only the tools named in only
// (all of them for nil): a read-only token's server, whose context prompt
// must not name tools its sessions cannot call. opts configure its tools.
func newMCPServerOnly(store *memory.Store, agent string, only []string, opts *tools.Options) (*mcp.Server, resourceList, error) {
	var listed resourceList
	ts, err := tools.New(store.Agent(agent), opts)
	if err != nil {
		return nil, listed, err
	}
	var offered []tools.Tool
	for _, t := range ts.Tools() {
		if only == nil || slices.Contains(only, t.Name) {
			offered = append(offered, t)
		}
	}
	what := "edit its memory blocks, store and search archival notes, search the conversation"
	if only != nil {
		what = "read-only: search archival notes and the conversation, load skills; its blocks are resources"
	}
	read := blockReader(store, agent)
	srv := mcp.NewServer(&mcp.Implementation{Name: "engram", Version: version}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf("Memory tools of agent %q: %s. "+
			"The prompt %q returns the agent's built memory context.", agent, what, contextPrompt),
		// Everything here is one agent's private memory: no shared cache
		// may keep it (the SDK's default scope is "public").
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
		// A subscription is accepted for a block the agent can read now;
		// watchResources sends notifications/resources/updated when it
		// changes, whoever changed it.
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			_, err := read(ctx, &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: req.Params.URI}})
			if err != nil {
				return err
			}
			// The SDK matches notifications to subscriptions by the exact
			// URI, and they go out with the block's own (blockURI): another
			// spelling of it would never be notified.
			if owner, label, _ := parseBlockURI(req.Params.URI); blockURI(owner, label) != req.Params.URI {
				return &jsonrpc.Error{Code: codeInvalidParams,
					Message: fmt.Sprintf("subscribe to %s, the block's URI as resources/list gives it, not %s", blockURI(owner, label), req.Params.URI)}
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	// mcpguard first (innermost): a URI no reply can echo is answered
	// before any handler; recoverHandlers outside it.
	srv.AddReceivingMiddleware(mcpguard.Middleware)
	srv.AddReceivingMiddleware(recoverHandlers)
	for _, t := range offered {
		name := t.Name
		srv.AddTool(mcpTool(t),
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args := req.Params.Arguments
				if len(args) == 0 {
					args = json.RawMessage(`{}`)
				}
				res, err := ts.Call(ctx, name, args)
				if err != nil {
					// A failure of the tool (the store, say) belongs in the
					// result, where the model reads it, not in a protocol
					// error.
					res = tools.Result{Content: "Error: " + err.Error(), IsError: true}
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}, nil
			})
	}
	srv.AddPrompt(&mcp.Prompt{Name: contextPrompt, Title: "Memory context",
		Description: fmt.Sprintf("The memory context of agent %q as its model would get it (memory blocks, skills, tool rules, environment, "+
			"and with message, the archival memories recalled for it), as one user message. The conversation history is left out: the host has its own.", agent),
		Arguments: []*mcp.PromptArgument{
			{Name: "message", Title: "Current message", Description: "The user's current message: recalls the archival memories relevant to it."},
			{Name: "model", Title: "Model", Description: "Model name for the token budget and tokenizer (default gpt-4o)."},
		}}, contextHandler(store, ts.Agent(), offered))
	// Blocks are resolved when read, so a block created after the server
	// started can be read at once; the list is kept current by
	// watchResources.
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "engram://{owner}/{label}", Name: "block",
		Description: "A memory block the agent can see: its own (owner = the agent) or one shared with it.", MIMEType: "text/plain"}, read)
	// The stamp is read before listing, so a change racing the listing
	// makes the next stamp differ (see memory.BlocksStamp).
	if listed.stamp, err = store.Agent(agent).BlocksStamp(context.Background()); err != nil {
		return nil, listed, err
	}
	if listed.uris, _, err = syncResources(context.Background(), srv, store, agent, nil, read); err != nil {
		return nil, listed, err
	}
	return srv, listed, nil
}

// recoverHandlers turns a panic in a method handler (a tool, a resource
// read, the context prompt) into an error for that one call. The SDK runs
// handlers on goroutines of its own without recovering, so under engram
// serve one agent's failing call would otherwise end the process and every
// agent's sessions with it.
func recoverHandlers(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, fmt.Errorf("engram: internal error in %s: %v", method, p)
			}
		}()
		return next(ctx, method, req)
	}
}

// contextPrompt is the name of the prompt that returns the built context.
const contextPrompt = "context"

// mcpTool is t as an MCP tool, with its hints as annotations. Every memory
// tool works on the agent's store only: a closed world.
func mcpTool(t tools.Tool) *mcp.Tool {
	destructive, openWorld := t.Hints.Destructive, false
	return &mcp.Tool{Name: t.Name, Title: t.Hints.Title, Description: t.Description, InputSchema: t.Parameters,
		Annotations: &mcp.ToolAnnotations{Title: t.Hints.Title, ReadOnlyHint: t.Hints.ReadOnly, DestructiveHint: &destructive,
			IdempotentHint: t.Hints.Idempotent || t.Hints.ReadOnly, OpenWorldHint: &openWorld}}
}

// contextHandler builds agent's context for the context prompt: the
// builder's defaults with the memory tools (so the environment and tool
// rules name them), the environment, and recall when a message is given.
func contextHandler(store *memory.Store, agent string, offered []tools.Tool) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		model := strings.TrimSpace(req.Params.Arguments["model"])
		if model == "" {
			model = "gpt-4o"
		}
		cfg := builder.DefaultConfig()
		cfg.TokenCounts = store
		// The current families' windows, as engram context and the UI use.
		cfg.ModelOverrides = builder.KnownModelLimits()
		message := strings.TrimSpace(req.Params.Arguments["message"])
		if message != "" {
			cfg.Recall = &builder.RecallOptions{}
		}
		var list builder.ToolList
		for _, t := range offered {
			bt, err := builder.NewTool(t.Name, t.Description, t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("build the context of %q: tool %q: %w", agent, t.Name, err)
			}
			list = append(list, bt)
		}
		b := builder.New(store.Agent(agent), cfg).WithModelInfo(builder.ModelInfoFor(model)).
			WithTools(list).WithEnvironment(builder.Environment{})
		if message != "" {
			b = b.WithCurrentMessage(memory.Message{Role: memory.RoleUser, Content: message})
		}
		built, err := b.Build(ctx)
		if err != nil {
			return nil, fmt.Errorf("build the context of %q: %w", agent, err)
		}
		text := built.System
		if text == "" && len(built.Messages) > 0 {
			// A model without a system role gets it as the first message.
			text = built.Messages[0].Content
		}
		desc := fmt.Sprintf("Memory context of %q for %s (window %d tokens): %d tokens of system prompt.",
			agent, model, built.Metadata.Limits.MaxTokens, built.Metadata.Tokens.System)
		for _, n := range append(ui.ModelNotes(model, 0), built.Metadata.Warnings...) {
			desc += " Note: " + n + "."
		}
		return &mcp.GetPromptResult{
			Description: desc,
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
		}, nil
	}
}

// syncResources makes the server's resource list the blocks agent sees
// now, adding and removing only what changed (each change notifies
// clients with notifications/resources/list_changed). It returns the
// blocks listed, and the URIs whose content or description changed or
// which went away since listed (for notifications/resources/updated).
func syncResources(ctx context.Context, srv *mcp.Server, store *memory.Store, agent string, listed map[string]listedBlock,
	read mcp.ResourceHandler) (map[string]listedBlock, []string, error) {
	own, err := store.Agent(agent).Blocks(ctx)
	if err != nil {
		return listed, nil, err
	}
	shared, err := store.Agent(agent).SharedBlocks(ctx)
	if err != nil {
		return listed, nil, err
	}
	all := own
	for _, s := range shared {
		all = append(all, s.BlockMeta)
	}
	now := map[string]listedBlock{}
	var updated []string
	for _, m := range all {
		desc := m.Description
		if m.SharedFrom != "" {
			desc = strings.TrimSpace(desc + fmt.Sprintf(" (shared from %s, %s)", m.SharedFrom, m.Permission))
		}
		uri := blockURI(m.Owner, m.Label)
		lb := listedBlock{desc: desc, content: sha256.Sum256([]byte(m.Rendered))}
		now[uri] = lb
		old, ok := listed[uri]
		if !ok || old.desc != desc {
			srv.AddResource(&mcp.Resource{URI: uri, Name: m.Label, Description: desc, MIMEType: "text/plain"}, read)
		}
		if ok && old != lb {
			updated = append(updated, uri)
		}
	}
	var gone []string
	for uri := range listed {
		if _, ok := now[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		srv.RemoveResources(gone...)
	}
	sort.Strings(gone)
	return now, append(updated, gone...), nil
}

// watchResources re-lists the agent's blocks whenever its BlocksStamp
// changes from the one the list it starts from was read at, until ctx
// ends, and tells subscribers of a block that changed or went away
// (notifications/resources/updated; the SDK sends it only to sessions
// subscribed to that URI).
func watchResources(ctx context.Context, srv *mcp.Server, store *memory.Store, agent string, from resourceList, every time.Duration) {
	read := blockReader(store, agent)
	last, listed := from.stamp, from.uris
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := store.Agent(agent).BlocksStamp(ctx)
		if err != nil || st == last {
			continue
		}
		// As above: the new stamp was read before this listing.
		l, updated, err := syncResources(ctx, srv, store, agent, listed, read)
		if err != nil {
			continue
		}
		listed, last = l, st
		for _, uri := range updated {
			srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}

// blockReader reads engram://OWNER/LABEL as agent: its own blocks and
// those shared with it, nothing else.
func blockReader(store *memory.Store, agent string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		owner, label, ok := parseBlockURI(req.Params.URI)
		if !ok {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		doc, err := store.Agent(agent).Shared(owner, label).Doc(ctx)
		if err != nil {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: doc.Render()}}}, nil
	}
}

func blockURI(owner, label string) string {
	return "engram://" + url.PathEscape(owner) + "/" + url.PathEscape(label)
}

func parseBlockURI(uri string) (owner, label string, ok bool) {
	rest, found := strings.CutPrefix(uri, "engram://")
	if !found {
		return "", "", false
	}
	o, l, found := strings.Cut(rest, "/")
	if !found {
		return "", "", false
	}
	owner, err1 := url.PathUnescape(o)
	label, err2 := url.PathUnescape(l)
	return owner, label, err1 == nil && err2 == nil && owner != "" && label != ""
}
