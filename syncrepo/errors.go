package syncrepo

import "errors"

var (
	// ErrFrame is wrapped by DecodeMessage's error for bytes that are not
	// one automerge-repo message.
	ErrFrame = errors.New("syncrepo: bad frame")
	// ErrURL is wrapped by ParseURL and ParseDocumentID's error for a
	// string that is not an automerge: URL or document id.
	ErrURL = errors.New("syncrepo: bad document id")
	// ErrProtocol is wrapped by Session.Serve's error when the peer breaks
	// the protocol (no join first, no common protocol version).
	ErrProtocol = errors.New("syncrepo: protocol error")
	// ErrStore is wrapped by Serve's error when the store failed to write
	// a peer's changes (rather than refusing them): the session ends so
	// that the peer, reconnecting, sends them again.
	ErrStore = errors.New("syncrepo: store failed")

	// errLoadPanicked is a document copy's failure, for the sessions
	// waiting for it, when its load panicked.
	errLoadPanicked = errors.New("syncrepo: loading a document's copy panicked")
)
