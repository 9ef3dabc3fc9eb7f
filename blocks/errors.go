package blocks

import "errors"

var (
	// ErrPermission is returned when the actor may not perform an operation:
	// the block's (or share's) permission forbids it, a field or section is
	// read-only, or an approver said no.
	ErrPermission = errors.New("blocks: permission denied")
	// ErrNeedsApproval wraps ErrPermission when a Partner/Human write was
	// refused by (or for lack of) an Approver; the store may keep it as a
	// proposal.
	ErrNeedsApproval = errors.New("blocks: write needs approval")
	// ErrWrongSchema is returned for an operation that does not fit the
	// block's schema (AppendText on a Map block, an unknown section, ...).
	ErrWrongSchema = errors.New("blocks: operation does not fit the block schema")
	// ErrLimit is returned when a write would push a block past its
	// character limit.
	ErrLimit = errors.New("blocks: character limit exceeded")
	// ErrNoMatch is returned by ReplaceText (of a Document or a Section) when
	// the text to replace does not occur: nothing is changed. Every write
	// path reports it the same way (the store's ApplyEdit and
	// ReplaceInBlock wrap it too, as memory.ErrNoMatch).
	ErrNoMatch = errors.New("blocks: no match")
	// ErrOutOfRange is returned for a list index that does not exist.
	ErrOutOfRange = errors.New("blocks: index out of range")
	// ErrHistorical is returned for a write to a read-only historical view
	// (see Document.At).
	ErrHistorical = errors.New("blocks: historical view is read-only")
	// ErrCorrupt is returned when document bytes cannot be loaded or the
	// document does not have the layout its schema requires.
	ErrCorrupt = errors.New("blocks: corrupt document")
	// ErrUnknownName is returned by ParseType and ParsePermission for a
	// name that is not a block type or permission; the message lists the
	// valid ones.
	ErrUnknownName = errors.New("blocks: unknown name")
	// ErrInvalidLabel is returned for a block label outside LabelRule.
	ErrInvalidLabel = errors.New("blocks: invalid label")
	// ErrManaged is returned when changes from elsewhere are merged straight
	// into a document a store manages (see Document.Managed), bypassing the
	// store's validation and persistence.
	ErrManaged = errors.New("blocks: document is managed by a store")
	// ErrUnrelated is returned when merged changes do not belong to the
	// document's history: changes of another document, or of an earlier
	// epoch of the block (see Document.Rebased). Merging them would
	// duplicate content, so they are refused.
	ErrUnrelated = errors.New("blocks: changes from another document history")
)
