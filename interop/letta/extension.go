package letta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/engram-go/engram/memory"
)

// ExtensionName is the key of the agent profile's extension that holds
// what a Letta agent file said about the agent and engram does not model
// (memory.Profile.Extensions).
const ExtensionName = "letta"

// extension is the "letta" extension of an imported agent's profile. An
// export writes it back beside what engram holds.
type extension struct {
	// Agent holds the agent's fields engram does not model (agent_type,
	// llm_config, embedding_config, description, tags, timezone, ...),
	// verbatim. Secrets are never among them.
	Agent map[string]json.RawMessage `json:"agent,omitempty"`
	// Blocks holds, by engram label, the other fields of each block the
	// agent owns (metadata, tags, template fields, ...), and its Letta
	// "label" when engram's differs.
	Blocks map[string]map[string]json.RawMessage `json:"blocks,omitempty"`
	// Tools holds, by tool name, each tool's fields engram does not model
	// (tool_type, source_type, source_code, tags, return_char_limit, ...;
	// engram never runs the code), "description" when it differs from the
	// schema's, and "json_schema_extra" for the schema's other members.
	Tools map[string]map[string]json.RawMessage `json:"tools,omitempty"`
	// ToolRules are the rules no engram rule holds, as they were.
	ToolRules []ToolRule `json:"tool_rules,omitempty"`
	// Groups are the groups the agent belongs to.
	Groups []groupExt `json:"groups,omitempty"`
	// Arguments holds, by tool call id, a call's arguments as the file
	// wrote them when that text is not the compact JSON engram stores
	// (spacing, indentation): an export writes it back while the call's
	// arguments are still that JSON. At most MaxKeptArgumentBytes an agent,
	// counted as stored (JSON-escaped).
	Arguments map[string]string `json:"arguments,omitempty"`
}

// MaxKeptArgumentBytes caps the tool-call argument texts an import keeps
// per agent (extension.Arguments); the calls past it are written back
// compact (reported).
const MaxKeptArgumentBytes = 256 << 10

// groupExt is a group with its agents and blocks named as engram names
// them.
type groupExt struct {
	Agents        []string        `json:"agents"`
	Manager       string          `json:"manager,omitempty"`
	Description   string          `json:"description"`
	ManagerConfig json.RawMessage `json:"manager_config,omitempty"`
	SharedBlocks  []blockRef      `json:"shared_blocks,omitempty"`
	// Listed are the agents whose group_ids name the group (Letta lists
	// it with the agents that manage it).
	Listed    []string `json:"listed,omitempty"`
	ProjectID *string  `json:"project_id,omitempty"`
	Hidden    *bool    `json:"hidden,omitempty"`
}

// blockRef names a block by owner and label.
type blockRef struct {
	Owner string `json:"owner"`
	Label string `json:"label"`
}

func (e *extension) empty() bool {
	return len(e.Agent) == 0 && len(e.Blocks) == 0 && len(e.Tools) == 0 && len(e.ToolRules) == 0 && len(e.Groups) == 0 && len(e.Arguments) == 0
}

// compactJSON is raw compacted ("" when raw is not JSON).
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

// readExtension returns p's "letta" extension (empty when it has none).
func readExtension(p memory.Profile) (extension, error) {
	var e extension
	raw, ok := p.Extensions[ExtensionName]
	if !ok {
		return e, nil
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, fmt.Errorf("%w: the profile's %q extension: %v", ErrInvalid, ExtensionName, err)
	}
	return e, nil
}

// unescapeHTML undoes the escapes encoding/json writes for <, >, &, U+2028
// and U+2029 inside the strings of compact JSON text (a stored value comes
// back so escaped), leaving every other escape as it is: the text of the
// same value as a file writes it unescaped.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch s[i+2 : i+6] {
			case "003c", "003C":
				b.WriteByte('<')
				i += 5
				continue
			case "003e", "003E":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			case "2028":
				b.WriteString("\u2028")
				i += 5
				continue
			case "2029":
				b.WriteString("\u2029")
				i += 5
				continue
			}
		}
		// Any other escape, \\ included, is copied whole.
		b.WriteByte(c)
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}
