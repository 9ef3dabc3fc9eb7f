// Package blockhook is the seam between a blocks.Document and the store
// that manages it, in the form package blocks can import: its types are
// generic in the blocks types they carry (the operation, the permission,
// the approval request, the merge origin, the document), and package
// internal/blockseam instantiates them for the store. Only blocks and
// blockseam import it; a store uses blockseam.
package blockhook

import "context"

// Writer makes the changes of a managed document durable (see
// blockseam.Manage). A store implements it.
type Writer[O, P any] interface {
	// Write runs one mutation of the document. It first brings the document
	// up to date with what other writers made durable, then calls apply with
	// the accessor's current permission on the block (which may differ from
	// the permission the view was made with: a share revoked or downgraded
	// since), and returns only once the change apply committed is durable.
	// apply validates the edit against that fresh state (schema, limits,
	// permission) and commits at most one automerge change. An error from
	// Write means nothing of the edit is kept: the document rolls the change
	// back.
	//
	// A store may also apply the edit before taking its lock, on the state
	// it last saw and with req.Permission, and keep that change if nothing
	// changed in between; otherwise it calls req.Undo (which takes the
	// change back out of the document) before bringing the document up to
	// date, then calls apply again. apply must not be called again without
	// an Undo in between.
	//
	// While a Write runs, views (Document.View) read the state apply met,
	// not the edit in flight: Value, Render, Size, SizeBytes, Heads, Save,
	// Fork, History and ChangeCount on a view never show an edit that may
	// still be taken back (SaveIncremental and At read the live document).
	// The managed document itself reads the live state the store writes. A
	// store serializes the Writes of one document, takes an edit back
	// before bringing the document up to date, and takes a failed one back
	// before Write returns, so the state apply meets is durable; changes
	// merged from elsewhere end the stable reads, so a Remote event's
	// subscribers read what it announces.
	Write(ctx context.Context, req WriteRequest[O, P], apply func(current P) error) error
}

// WriteRequest describes the mutation a Writer is asked to run.
type WriteRequest[O, P any] struct {
	Label    string
	Accessor string // the view's accessor ("" for a view without one)
	Actor    string // who the change is attributed to: an agent id or "system"
	System   bool   // the system acts: no permission applies
	Op       O
	// Permission is the one the view holds: what apply assumes when it is
	// given that value (Write's store checks it is still current).
	Permission P
	// Undo takes back what the last apply changed (nothing if it changed
	// nothing). Nil when the caller cannot undo: apply then runs once.
	Undo func() error
	// Decision is what the store passed to Approved for the view writing
	// (nil otherwise): its record of the approval, to commit with the edit.
	Decision any
}

// Attributor is implemented by a Writer whose store records which agent
// merged each change that came from elsewhere (a store's MergeChanges: an
// automerge peer's or a fork's changes). Such a change's commit message is
// its maker's and may name anyone, or no one: History, on the managed
// document, its views and their At views, shows the agent the store names
// as the change's Actor, OpMerge as its Op, no Section or Field, and the
// message as PeerMessage.
type Attributor interface {
	// MergedBy returns the agent that merged each change the store merged
	// from elsewhere into the block, by change hash (hex), in any of the
	// block's epochs.
	MergedBy(ctx context.Context) (map[string]string, error)
}

// Proposer is implemented by a Writer that keeps an edit which needs an
// approval it did not get as a proposal (a store's ProposeEdit). A write
// through any view of the managed document that is refused for want of an
// approval (an error wrapping ErrNeedsApproval) is handed to it, so a
// write through a view ends as the store's own edit methods end.
type Proposer[A any] interface {
	// Propose keeps the edit req describes, which was refused with
	// refused, as a proposal, and returns the error the write returns
	// (refused itself when it keeps nothing).
	Propose(ctx context.Context, req A, refused error) error
}

// LogRotator is implemented by a Writer that keeps the oldest entries of
// its Log blocks (entries E: blocks.LogEntry) elsewhere (a store moves them to archival memory). On a
// document whose Writer is one, an append to a Log block whose schema sets
// a Retention rotates as part of the append itself, in the same automerge
// change and so in the same Write: it removes the oldest entries until at
// most Retention remain and the block, new entry included, fits its
// character limit. A full log therefore never refuses an append; only an
// entry too large for the block on its own is refused (ErrLimit). Being
// part of the write, rotation happens on every path that appends (the
// store's edits, its tools, a view from the store) and commits with it or
// not at all.
type LogRotator[E any] interface {
	// RotateLog is called inside Write's apply, once the append is
	// applied, with the entries it removed, oldest first, for the Writer
	// to persist in the transaction that persists the append. It is not
	// called when the append removed nothing. A Writer that applies an
	// edit again (after an Undo) gets the call again; the last one holds.
	RotateLog(removed []E)
}

// Merged is what a Replica.Merge brought in: the changes that were new to
// the document.
type Merged struct {
	// Data is those changes encoded for LoadIncremental (nil when there
	// were none): what the store persists.
	Data []byte
	// Hashes are their change hashes (hex), in Data's order: what a store
	// records as merged by the agent it merged them for (see Attributor).
	Hashes []string
}

// Carried is what a replica had not persisted when Reset moved it to a
// new epoch; Reapply brings its effect into the new epoch. State is
// package blocks' own record of it.
type Carried struct{ State any }

// Replica is the store's side of a managed document: the one way durable
// changes from elsewhere (other processes, external automerge peers the
// store has validated) enter it. O is the origin a merge is judged as
// (blocks.Origin), D the document (*blocks.Document). Package blocks
// documents each method on its implementation.
type Replica[O, D any] interface {
	// Hold defers the Remote events of the changes the store brings in
	// until the matching Release. Holds nest.
	Hold()
	// Release ends a Hold and returns the deferred event to fire once
	// the store's own lock is released (nil: none).
	Release() (fireEvent func())
	// LoadIncremental applies durable changes made elsewhere.
	LoadIncremental(data []byte) error
	// LoadIncrementals is LoadIncremental of each of chunks in order, the
	// merged state validated once.
	LoadIncrementals(chunks [][]byte) error
	// Unknown returns those of heads the document does not hold.
	Unknown(heads []string) []string
	// Merge brings changes made by an external automerge peer in, judged
	// as an edit by from would be; undo takes them back out.
	Merge(data []byte, from O) (fresh Merged, undo func() error, err error)
	// Reset replaces the document with the saved document of the block's
	// new epoch, in place.
	Reset(data []byte) (*Carried, error)
	// Adopt is Reset to fresh, a document Rebased made from this replica.
	Adopt(fresh D) (*Carried, error)
	// Reapply brings what Reset or Adopt carried into the new epoch,
	// through archived, the saved documents of the epochs from the one it
	// was carried from to the one before the new epoch.
	Reapply(k *Carried, archived [][]byte) error
}

// Set by package blocks when it is initialized; called only by package
// blockseam, which gives them their types.
var (
	// Manage hands doc (a *blocks.Document) to w (a Writer) and returns
	// its Replica.
	Manage func(doc, w any) (any, error)
	// MarkPersisted records that everything of doc up to heads is durable.
	MarkPersisted func(doc any, heads []string) error
	// Automerge returns an independent copy (an *automerge.Doc) of the
	// automerge document a read through doc sees.
	Automerge func(doc any) (any, error)
	// KnownSize is doc's size in characters as last computed, without
	// reading the document again.
	KnownSize func(doc any) int
)
