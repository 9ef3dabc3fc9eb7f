// Package blockseam is how a store manages a blocks.Document: it hands the
// document a Writer that makes every edit durable (Manage), receives the
// Replica through which durable changes from elsewhere enter the document,
// and records what is persisted (MarkPersisted). Package memory is its
// user, and package syncrepo copies documents through it (Automerge);
// users of blocks meet a managed document only through its public
// methods (Document.Managed, and ErrManaged from LoadIncremental, Merge
// and sync messages on it).
//
// The types are package blockhook's, instantiated with the blocks types
// they carry; blockhook documents them.
package blockseam

import (
	"fmt"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockhook"
)

type (
	// Writer makes the changes of a managed document durable; a store
	// implements it.
	Writer = blockhook.Writer[blocks.Op, blocks.Permission]
	// WriteRequest describes the mutation a Writer is asked to run.
	WriteRequest = blockhook.WriteRequest[blocks.Op, blocks.Permission]
	// Attributor is implemented by a Writer whose store records which
	// agent merged each change that came from elsewhere.
	Attributor = blockhook.Attributor
	// Proposer is implemented by a Writer that keeps an edit refused for
	// want of an approval as a proposal.
	Proposer = blockhook.Proposer[blocks.ApprovalRequest]
	// LogRotator is implemented by a Writer that keeps the oldest
	// entries of its Log blocks elsewhere; appends to a Log block with a
	// Retention then rotate as part of the append.
	LogRotator = blockhook.LogRotator[blocks.LogEntry]
	// Merged is what Replica.Merge brought in.
	Merged = blockhook.Merged
	// Carried is what Replica.Reset carried over to a new epoch, for
	// Replica.Reapply.
	Carried = blockhook.Carried
	// Replica is the store's side of a managed document.
	Replica = blockhook.Replica[blocks.Origin, *blocks.Document]
)

// Manage hands d to a store. From then on every mutation made through any
// of its views runs inside w.Write, so it is validated against the durable
// state and is durable when the method returns (or rolled back with the
// error). Changes made elsewhere can then only arrive through the returned
// Replica, which the store keeps: LoadIncremental, Merge and sync messages
// on the document's views fail with blocks.ErrManaged, because changes
// that bypass the store would be neither validated nor persisted. Manage
// may be called once per document (again: an error wrapping
// blocks.ErrManaged).
func Manage(d *blocks.Document, w Writer) (Replica, error) {
	if d == nil || w == nil {
		return nil, fmt.Errorf("blockseam: manage: nil document or writer")
	}
	r, err := blockhook.Manage(d, w)
	if err != nil {
		return nil, err
	}
	return r.(Replica), nil
}

// MarkPersisted records that everything of d up to heads (hex change
// hashes, as Document.PendingChanges returns them) is durable: the
// document's own changes up to them are no longer pending.
func MarkPersisted(d *blocks.Document, heads []string) error {
	return blockhook.MarkPersisted(d, heads)
}

// Automerge returns an independent copy of the automerge document a read
// through d sees (a view's state, with a new actor), copied in memory
// rather than saved and loaded.
func Automerge(d *blocks.Document) (*automerge.Doc, error) {
	am, err := blockhook.Automerge(d)
	if err != nil {
		return nil, err
	}
	return am.(*automerge.Doc), nil
}

// KnownSize is d's full rendered size in characters (Document.Size) as
// last computed, without reading the document again: a merge not read
// since is not in it. Cheap enough for every write's release.
func KnownSize(d *blocks.Document) int { return blockhook.KnownSize(d) }
