// Package serve is the HTTP door of "engram serve": MCP Streamable HTTP
// at /mcp for agents, the web UI for people, /healthz for load balancers,
// each caller identified by an access token (memory.Cache.VerifyToken),
// never by a parameter.
//
// The package owns the HTTP concerns — bearer authentication, session
// binding, the Origin rule, body limits, the session cap, per-token rate
// limits, the failed-login limit per client address, access logs,
// /metrics and draining — and gets the MCP server of an agent
// and the web UI of a person from its caller (Options.MCPServer,
// Options.UI), so the tools, resources and pages are exactly those of
// "engram mcp" and "engram ui".
package serve
