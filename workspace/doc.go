// Package workspace maps a directory of markdown files onto an agent's
// memory blocks and back — the layered-workspace model many agent
// frameworks use:
//
//	SOUL.md              → Core block "persona"
//	AGENTS.md            → Core block "guidelines"
//	MEMORY.md            → Working block "memory" (pinned)
//	TOOLS.md             → Core block "tools" (ReadOnly for the agent)
//	skills/<name>/SKILL.md → Working block "skill:<name>" (ReadOnly)
//
// Import creates or updates the blocks (updates are diffed, so re-importing
// an edited file adds a small change, not a rewrite); a missing file is
// skipped. Export writes the blocks' text back to the same paths. A round
// trip is lossless for these text blocks.
package workspace
