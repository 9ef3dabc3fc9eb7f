// Package blocks implements one memory block: an automerge CRDT document
// with its metadata (label, description, type, schema, permission, character
// limit), typed operations per schema, permission checks, rendering, history
// and the plumbing to persist and merge it.
//
// # Views, actors and permissions
//
// A [Document] is a view of a block for one accessor (an agent id) with that
// accessor's effective permission: its own, or the one a share granted.
// [Document.View] makes another view of the same document; all views share
// one CRDT document. Every mutating method takes the actor last:
//
//	doc.SetText("Hello", blocks.System)     // trusted caller, no checks
//	doc.AppendText(" more", blocks.Agent)   // as the view's accessor
//
// For an agent, permissions are ordered ReadOnly < Partner < Human < Append <
// ReadWrite < Admin: ReadOnly writes nothing; Partner and Human writes go to
// an [Approver] (none means denied, error matching both [ErrPermission] and
// [ErrNeedsApproval]); Append allows only appending operations (append text,
// append log entry, push item, append to a list field, increment a counter);
// ReadWrite allows any content operation; Admin also deletion and
// reconfiguration. Read-only fields and sections in the schema bind agents
// whatever their permission. [System] bypasses all checks; character limits
// and schema validation still apply to it.
//
// # Sections
//
// A Composite block is made of named sections, each with its own schema.
// [Document.Section] addresses one; the [Section] it returns has the same
// typed operations and reads as the Document, applied to that section:
//
//	doc.Section("notes").AppendText(" more", blocks.Agent)
//	doc.Section("todo").CheckItem(0, true, blocks.Agent)
//	doc.Section("health").Field("errors")
//
// The section "" is the block itself, so a caller holding an optional
// section name addresses any block one way. An operation on a section the
// block does not have, or on a Composite block as a whole, fails with
// [ErrWrongSchema] naming the block and the section.
//
// # Writes
//
// Each operation is planned on a copy of the current value, validated
// against the schema (errors wrap schema.ErrInvalid and name the field) and
// the character limit ([ErrLimit]), and only then applied to the CRDT as one
// automerge change whose message records the actor and operation. A refused
// write therefore leaves the document byte-for-byte unchanged. Whole-value
// writes (SetText, SetValue, text fields, Restore) are diffed into minimal
// splices, because every character written is an op kept forever in the
// document's history.
//
// A store bounds a block's history with epochs: [Document.Rebased] builds a
// fresh document holding only the current value, the store switches its
// managed document to it in place (views keep working), carrying
// unpersisted edits over (merged with the archived epochs they cross, then
// made again as a value difference), and Merge refuses changes
// from another history ([ErrUnrelated]).
//
// Text edits are text splices, counters are automerge counters and list
// items are list elements, so concurrent edits from replicas merge instead
// of overwriting: two forks that append to one text both keep their appends,
// increments of 3 and 4 make 7.
//
// # Rendering
//
// [Document.Render] is deterministic: the same heads give the same bytes.
// Text shows its content (a viewport shows a window and "[lines 11-30 of
// 200]"); Map shows "field: value" lines in schema order, with "[read-only]"
// markers; List shows "1. item" or "[ ] item" / "[x] item"; Log shows
// entries newest first as "[RFC3339] message (field: value)" up to its
// display limit; Composite shows "=== section ===" headers.
//
// # Concurrency
//
// A Document and all its views are safe for concurrent use. Subscribers
// ([Document.Subscribe]) are called after each commit and after merges,
// on the writer's goroutine, with no lock of the document held. An
// Approver is also called with no lock held. On a document a store
// manages, Remote events (other writers' changes arriving) wait while the
// store holds its lock on the block and fire once it is
// released, after the store's transaction: a subscriber may read the
// document and call the store (read the block, close the store). A merge
// the store makes inside a write that then fails is never announced.
//
// # Documents a store manages
//
// The documents a store (package memory) hands out are managed
// ([Document.Managed]): the store took them over through its own seam
// (internal/blockseam), not through any method of this package. Every
// mutation through any view then runs inside the store's write, which
// brings the document up to date, lets the edit validate itself against
// that state with the accessor's current permission, and makes it durable;
// if the write fails, the edit is rolled back (the document becomes a fork
// at the prior heads: automerge cannot undo a commit) and subscribers never
// hear of it. Changes from elsewhere reach a managed document only through
// the store (its MergeChanges); LoadIncremental, Merge and sync messages on
// its views fail with [ErrManaged]. On any document, merged changes that break
// the schema (or, from a peer, the character limit) are refused and
// nothing of them is kept.
package blocks
