package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/tools"
)

// version is reported to MCP clients.
const version = "0.1.0"

func cmdMCP(ctx context.Context, a *app, args []string) error {
	var agent string
	if _, err := flags("mcp", args, func(fs *flag.FlagSet) { fs.StringVar(&agent, "agent", "", "agent id the tools act as") }); err != nil {
		return err
	}
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

// resourcePoll is how often the server checks whether the agent's blocks
// or shares changed (one indexed query: memory.Cache.BlocksStamp), in this
// process or another on the same store.
const resourcePoll = 500 * time.Millisecond

// newMCPServer exposes agent's memory tools as MCP tools and its blocks
// (own and shared) as MCP resources engram://<owner>/<label>.
func newMCPServer(store *memory.Cache, agent string) (*mcp.Server, error) {
	srv, _, err := newMCPServerListed(store, agent)
	return srv, err
}

// resourceList is what the server lists as resources, and the agent's
// BlocksStamp read before that listing (see watchResources).
type resourceList struct {
	uris  map[string]string // URI → description
	stamp memory.BlocksStamp
}

// newMCPServerListed is newMCPServer, also returning the resource list it
// made, for watchResources to start from (listing again would announce
// every resource as changed).
func newMCPServerListed(store *memory.Cache, agent string) (*mcp.Server, resourceList, error) {
	var listed resourceList
	ts, err := tools.New(store, agent, nil)
	if err != nil {
		return nil, listed, err
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "engram", Version: version}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf("Memory tools of agent %q: edit its memory blocks, store and search archival notes, search the conversation.", agent),
	})
	for _, t := range ts.Tools() {
		name := t.Name
		srv.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters},
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
	// Blocks are resolved when read, so a block created after the server
	// started can be read at once; the list is kept current by
	// watchResources.
	read := blockReader(store, agent)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "engram://{owner}/{label}", Name: "block",
		Description: "A memory block the agent can see: its own (owner = the agent) or one shared with it.", MIMEType: "text/plain"}, read)
	// The stamp is read before listing, so a change racing the listing
	// makes the next stamp differ (see memory.BlocksStamp).
	if listed.stamp, err = store.BlocksStamp(context.Background(), agent); err != nil {
		return nil, listed, err
	}
	if listed.uris, err = syncResources(context.Background(), srv, store, agent, nil, read); err != nil {
		return nil, listed, err
	}
	return srv, listed, nil
}

// syncResources makes the server's resource list the blocks agent sees
// now, adding and removing only what changed (each change notifies
// subscribed clients with notifications/resources/list_changed). It
// returns the URIs listed.
func syncResources(ctx context.Context, srv *mcp.Server, store *memory.Cache, agent string, listed map[string]string,
	read mcp.ResourceHandler) (map[string]string, error) {
	own, err := store.ListBlocks(ctx, agent)
	if err != nil {
		return listed, err
	}
	shared, err := store.ListSharedBlocks(ctx, agent)
	if err != nil {
		return listed, err
	}
	all := own
	for _, s := range shared {
		all = append(all, s.BlockMeta)
	}
	now := map[string]string{}
	for _, m := range all {
		desc := m.Description
		if m.SharedFrom != "" {
			desc = strings.TrimSpace(desc + fmt.Sprintf(" (shared from %s, %s)", m.SharedFrom, m.Permission))
		}
		uri := blockURI(m.Owner, m.Label)
		now[uri] = desc
		if old, ok := listed[uri]; !ok || old != desc {
			srv.AddResource(&mcp.Resource{URI: uri, Name: m.Label, Description: desc, MIMEType: "text/plain"}, read)
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
	return now, nil
}

// watchResources re-lists the agent's blocks whenever its BlocksStamp
// changes from the one the list it starts from was read at, until ctx
// ends.
func watchResources(ctx context.Context, srv *mcp.Server, store *memory.Cache, agent string, from resourceList, every time.Duration) {
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
		st, err := store.BlocksStamp(ctx, agent)
		if err != nil || st == last {
			continue
		}
		// As above: the new stamp was read before this listing.
		if l, err := syncResources(ctx, srv, store, agent, listed, read); err == nil {
			listed, last = l, st
		}
	}
}

// blockReader reads engram://OWNER/LABEL as agent: its own blocks and
// those shared with it, nothing else.
func blockReader(store *memory.Cache, agent string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		owner, label, ok := parseBlockURI(req.Params.URI)
		if !ok {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		doc, err := store.GetSharedBlock(ctx, agent, owner, label)
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
