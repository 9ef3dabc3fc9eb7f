// Package tools gives an agent loop the memory tools it hands its model,
// Letta-style: small, well-described functions the model calls to change
// its own memory blocks and to save and search long-term memory.
//
// # Tools
//
//   - block_append: add text at the end of a text block (or text section),
//     on a new line.
//   - block_replace: replace one exact passage of a text block; the passage
//     must occur exactly once ("no match for …" / "N matches; include more
//     context" otherwise).
//   - block_set_field: set or clear (null) a field of a block of fields.
//   - block_push_item: add an item to a list block, or to a list field.
//   - block_insert_line: insert a line into a text block at a 1-based line.
//   - log_append: add a timestamped entry, with extra fields, to a log block.
//   - archival_insert: save an archival entry with tags and metadata.
//   - archival_consolidate: find near-duplicate archival entries and propose
//     merging them (memory.Archival.Consolidate; merges wait for approval).
//   - archival_search: search archival memory (fts, vector, hybrid, auto),
//     with tag and time filters; JSON results with id, snippet, score and
//     how the score was computed.
//   - conversation_search: the same over the agent's messages only.
//   - propose_edit: propose an edit (any memory.Edit op) with a reason to a
//     block whose writes need approval (Human or Partner); it is checked on
//     a private copy first and stored as a proposal.
//
// Each tool's parameters are a JSON Schema generated with
// invopop/jsonschema from its Go argument struct: descriptions on every
// property, required properties listed, additionalProperties false.
// Toolset.Tools lists them in a stable order; Tool.Definition gives the
// OpenAI function-calling form; builder.NewTool(t.Name, t.Description,
// t.Parameters) gives a builder.Tool.
//
// # Calls
//
// Toolset.Call runs a call as the Toolset's agent through its handle
// (tools.New(store.Agent("entropy"), nil)), so the store's rules hold
// exactly as for any other agent write: block and
// share permissions (a Human/Partner write without approval becomes a
// proposal, reported as awaiting approval), character limits, schemas,
// read-only fields and sections, and isolation (another agent's unshared
// block is "not found", never "forbidden"). Blocks shared with the agent
// are addressed with the owner argument.
//
// With Options.Rules set, each call that passed argument checking goes
// through toolrules.Engine.Call first; a violation comes back as an error
// result naming the rule, and Toolset.Allowed filters the tool list to what
// the rules allow next.
//
// Whatever the model gets wrong comes back as a Result with IsError set and
// Content starting "Error: ", saying what to change (unknown tool, invalid
// JSON, unknown/missing/mistyped arguments, permission, limit, schema, no
// unique match, unknown block, rule violation). A refused call changes
// nothing. Call returns a Go error only for problems outside the model's
// control (cancelled context, closed store, failed write, embedder failure,
// a handler panic wrapping ErrInternal), and never panics.
package tools
