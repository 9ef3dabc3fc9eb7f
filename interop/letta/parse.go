package letta

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Parse reads a Letta agent file. The document may also be one JSON
// string holding the document, as some exports are. Anything that is not
// an agent file (not JSON, or no "agents" list: an engram dump, say) is
// ErrNotAgentFile.
func Parse(data []byte) (*File, error) {
	doc, err := document(data)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(doc, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return &f, nil
}

// IsAgentFile reports whether data looks like a Letta agent file (see
// Parse): a JSON object, or a JSON string holding one, with an "agents"
// list and at least one other key of the format. It does not check the
// rest.
func IsAgentFile(data []byte) bool {
	_, err := document(data)
	return err == nil
}

// document returns the agent file's JSON object, unwrapping a document
// held in a JSON string.
func document(data []byte) ([]byte, error) {
	data = bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if len(data) > 0 && data[0] == '"' {
		var inner string
		if err := json.Unmarshal(data, &inner); err != nil {
			return nil, fmt.Errorf("%w: a JSON string that does not decode: %v", ErrNotAgentFile, err)
		}
		data = bytes.TrimSpace([]byte(inner))
	}
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrNotAgentFile)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAgentFile, err)
	}
	agents, ok := keys["agents"]
	if !ok || len(agents) == 0 || agents[0] != '[' {
		return nil, fmt.Errorf("%w: no \"agents\" list", ErrNotAgentFile)
	}
	for _, k := range []string{"blocks", "tools", "groups", "files", "sources", "mcp_servers", "metadata"} {
		if _, ok := keys[k]; ok {
			return data, nil
		}
	}
	return nil, fmt.Errorf("%w: an \"agents\" list but none of blocks, tools, groups, files, sources, mcp_servers or metadata", ErrNotAgentFile)
}
