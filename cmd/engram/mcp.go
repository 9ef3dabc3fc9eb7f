package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strings"

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
	s, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer a.close()
	srv, err := newMCPServer(s, agent)
	if err != nil {
		return err
	}
	return srv.Run(ctx, &mcp.StdioTransport{})
}

// newMCPServer exposes agent's memory tools as MCP tools and its blocks
// (own and shared) as MCP resources engram://<owner>/<label>.
func newMCPServer(store *memory.Cache, agent string) (*mcp.Server, error) {
	ts, err := tools.New(store, agent, nil)
	if err != nil {
		return nil, err
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
					return nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}, nil
			})
	}
	ctx := context.Background()
	own, err := store.ListBlocks(ctx, agent)
	if err != nil {
		return nil, err
	}
	shared, err := store.ListSharedBlocks(ctx, agent)
	if err != nil {
		return nil, err
	}
	all := own
	for _, s := range shared {
		all = append(all, s.BlockMeta)
	}
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
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
	for _, m := range all {
		desc := m.Description
		if m.SharedFrom != "" {
			desc = strings.TrimSpace(desc + fmt.Sprintf(" (shared from %s, %s)", m.SharedFrom, m.Permission))
		}
		srv.AddResource(&mcp.Resource{URI: blockURI(m.Owner, m.Label), Name: m.Label, Description: desc, MIMEType: "text/plain"}, read)
	}
	return srv, nil
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
