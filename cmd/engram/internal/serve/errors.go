package serve

import "errors"

// ErrInvalidOptions is wrapped by New's error for missing or contradictory
// options.
var ErrInvalidOptions = errors.New("serve: invalid options")

// errTokenBusy is why a request gets no turn: Options.TokenQueue requests
// of its token wait for one already.
var errTokenBusy = errors.New("serve: the token's requests fill its turns and its queue")
