package serve

import "errors"

// ErrInvalidOptions is wrapped by New's error for missing or contradictory
// options.
var ErrInvalidOptions = errors.New("serve: invalid options")
