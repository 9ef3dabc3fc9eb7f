package ui

import "errors"

var (
	// ErrUnknownAgent is returned (and shown as a 404 page) for an agent id
	// that owns nothing in the store: no block, share, archival entry or
	// message.
	ErrUnknownAgent = errors.New("ui: unknown agent")
	// ErrNoAgentLister is returned by New and Agents for a store that
	// cannot list its agents (it has no Admin method).
	ErrNoAgentLister = errors.New("ui: store cannot list agents (it has no Admin method)")
	// ErrBusy is shown as a 503 page when a view of a large block's history
	// could not be computed within Options.HeavyTimeout.
	ErrBusy = errors.New("ui: busy")
	// ErrBasePath is returned by New for an Options.BasePath that is not
	// "/" followed by plain path segments.
	ErrBasePath = errors.New("ui: invalid base path")
)
