package serve

import "errors"

// ErrInvalidOptions is wrapped by New's error for missing or contradictory
// options.
var ErrInvalidOptions = errors.New("serve: invalid options")

// errTokenBusy is why a request gets no turn: Options.TokenQueue requests
// of its token wait for one already.
var errTokenBusy = errors.New("serve: the token's requests fill its turns and its queue")

// errTurnTimeout is why a /sync connection is closed (1013, try again
// later) when its frame waited FrameReadTimeout for its token's turn: a
// connection waiting for a turn reads nothing, so a peer gone meanwhile
// is noticed only then.
var errTurnTimeout = errors.New("serve: a /sync frame waited too long for its token's turn")
