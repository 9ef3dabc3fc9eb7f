// Package serve is the HTTP door of "engram serve": MCP Streamable HTTP
// at /mcp for agents, the web UI for people, /healthz and /readyz for
// load balancers, each caller identified by an access token (accesstoken.Tokens.Verify),
// never by a parameter.
//
// The package owns the HTTP concerns — bearer authentication, session
// binding, the Host rule of a loopback listener and the Origin rule on
// every path, body limits, JSON-RPC batches (only where the session's
// protocol version has them, capped, each message paid from the rate
// limit), the session cap, per-token rate limits, the failed-login limit
// per client address, access logs, /metrics and draining — and gets the MCP server of an agent
// and the web UI of a person from its caller (Options.MCPServer,
// Options.UI), so the tools, resources and pages are exactly those of
// "engram mcp" and "engram ui".
package serve
