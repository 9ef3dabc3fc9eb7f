package letta

import "errors"

var (
	// ErrNotAgentFile is returned by Parse for input that is not a Letta
	// agent file: not JSON, or JSON without the file's "agents" list.
	ErrNotAgentFile = errors.New("letta: not a Letta agent file")
	// ErrInvalid is wrapped by errors about an agent file engram cannot
	// import as it is (an agent without a name, a block id no block has, a
	// label two blocks of one agent use, ...) and about bad options; the
	// message names the agent, block, message or option.
	ErrInvalid = errors.New("letta: invalid agent file")
)
