package serve

import "time"

// ObserveTool records a tool call's latency as the MCP middleware does,
// for a tool name no server could be given.
func ObserveTool(h *Handler, tool string, d time.Duration) { h.metrics.observe(tool, d) }
