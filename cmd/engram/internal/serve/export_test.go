package serve

import "time"

// ObserveTool records a tool call's latency as the MCP middleware does,
// for a tool name no server could be given.
func ObserveTool(h *Handler, tool string, d time.Duration) { h.metrics.observe(tool, d) }

// Turns is the number of tokens with requests being served or waiting
// for a turn, and of requests waiting.
func Turns(h *Handler) (tokens, waiting int) { return h.turns.count() }

// SetFrameReadTimeout sets how long a /sync frame's body may take once it
// has its turn (FrameReadTimeout), for connections opened after.
func SetFrameReadTimeout(h *Handler, d time.Duration) { h.frameTimeout = d }
