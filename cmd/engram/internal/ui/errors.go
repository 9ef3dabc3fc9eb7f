package ui

import "errors"

var (
	// ErrUnknownAgent is returned (and shown as a 404 page) for an agent id
	// that owns nothing in the store: no block, archival entry or message.
	ErrUnknownAgent = errors.New("ui: unknown agent")
	// ErrNoAgentLister is returned by New when Options.Agents is nil and
	// the store cannot list its agents itself (it has no DB method).
	ErrNoAgentLister = errors.New("ui: store cannot list agents; set Options.Agents")
)
