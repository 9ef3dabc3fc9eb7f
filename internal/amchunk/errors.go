package amchunk

import "errors"

var (
	// ErrFormat is wrapped by Measure's error for bytes that are not
	// automerge chunks.
	ErrFormat = errors.New("amchunk: not automerge data")
	// ErrTooCostly is wrapped by Measure's error when the chunks ask for
	// more than its Limits allow, and by Inflate's for data that inflates
	// past its limit; the message says which and how much.
	ErrTooCostly = errors.New("amchunk: changes too costly")
)
