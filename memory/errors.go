package memory

import (
	"errors"
	"fmt"

	"github.com/engram-go/engram/blocks"
)

var (
	// ErrNotFound is returned for a block, archival entry, message, batch,
	// summary or proposal that does not exist or is not visible to the
	// caller. Another agent's unshared block is "not found", never
	// "forbidden", so its existence does not leak.
	ErrNotFound = errors.New("memory: not found")
	// ErrExists is returned when creating a block whose label the agent
	// already uses.
	ErrExists = errors.New("memory: already exists")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("memory: store is closed")
	// ErrPersist wraps failures to make a change durable. The write
	// returned it and kept nothing: in write-through mode the edit was
	// rolled back, so every read shows the last durable state; in
	// write-back mode the change stays pending for the next Flush.
	ErrPersist = errors.New("memory: change not persisted")
	// ErrUnknownScheme is returned by Open for a store URL whose scheme no
	// backend serves: neither SQLite, built in, nor one registered (see
	// Register); the message names the import it may lack.
	ErrUnknownScheme = errors.New("memory: unknown store scheme")
	// ErrCorrupt is returned for a block whose stored bytes are damaged (a
	// torn or corrupt update row or snapshot, found by its checksum, or
	// changes that do not load). It is blocks.ErrCorrupt, so one check
	// covers both packages; the message names the block and the row.
	ErrCorrupt = blocks.ErrCorrupt
	// ErrInvalidArgument is returned for malformed arguments (empty agent
	// id or label, negative limits, ...).
	ErrInvalidArgument = errors.New("memory: invalid argument")
	// ErrNoMatch is returned by every write path — Block.Apply,
	// Block.Replace, Block.Propose, Agent.ApproveProposal and the Document view
	// (Document.ReplaceText) — for a replace_text edit whose old text does
	// not occur in the block; nothing is changed. It is blocks.ErrNoMatch.
	ErrNoMatch = blocks.ErrNoMatch
	// ErrTooLarge is returned for an archival entry or a message past one
	// of the per-entry caps (Options.MaxArchivalBytes, MaxMetadataBytes,
	// MaxTags, MaxTagBytes, MaxMessageBytes); nothing is stored. The
	// message names the agent, the field, its size and the cap.
	ErrTooLarge = errors.New("memory: too large")
	// ErrQuota is returned for a write that would take an agent's stored
	// archival entries and messages past Options.AgentQuotaBytes; nothing
	// is stored. The message names the agent, what it holds, what the
	// write adds and the quota.
	ErrQuota = errors.New("memory: storage quota exceeded")

	// ErrBlockBusy: in write-back mode (Options.WriteBack), an edit of a
	// block whose copy had left the cache, while other copies of the
	// block loaded since in this process kept taking edits of their own
	// as it flushed them (64 times). The edit was not made; it may be
	// tried again.
	ErrBlockBusy = errors.New("memory: block busy: other copies of it in this process kept taking edits")
)

// ProposalError is returned when a Partner/Human write was not approved and
// was kept as a proposal. It matches blocks.ErrPermission and
// blocks.ErrNeedsApproval through its wrapped error.
type ProposalError struct {
	ProposalID int64
	Err        error
}

func (e *ProposalError) Error() string {
	return fmt.Sprintf("%v (kept as proposal #%d for approval)", e.Err, e.ProposalID)
}

func (e *ProposalError) Unwrap() error { return e.Err }

// EntryError is a batch call's error about one of its entries (see
// [Archival.InsertBatch]): Index is the entry's position in the batch, from 0.
type EntryError struct {
	Index int
	Err   error
}

func (e *EntryError) Error() string { return fmt.Sprintf("entry %d: %v", e.Index, e.Err) }

func (e *EntryError) Unwrap() error { return e.Err }

func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func notFound(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
}

// InapplicableEditError is the error of an edit that needed approval
// ([Block.Apply] at Partner or Human permission, [Block.Propose]) and
// could not apply even if approved, so no proposal was kept. Err is why
// ([ErrNoMatch], schema.ErrInvalid, blocks.ErrLimit, blocks.ErrPermission
// for a read-only field or section, ...), for a caller that words the
// refusal itself; errors.Is sees through it.
type InapplicableEditError struct{ Err error }

func (e *InapplicableEditError) Error() string {
	return "memory: edit could not be applied even if approved: " + e.Err.Error()
}

func (e *InapplicableEditError) Unwrap() error { return e.Err }
