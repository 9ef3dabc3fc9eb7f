package accesstoken

import "errors"

// Errors. A missing token is memory.ErrNotFound, a malformed argument
// memory.ErrInvalidArgument and a closed store memory.ErrClosed, as for
// everything else kept in a store.
var (
	// ErrInvalid is returned by Tokens.Verify for a secret that is not a
	// token of this store (malformed, unknown, or a hash mismatch). The
	// caller learns nothing else: 401 over HTTP.
	ErrInvalid = errors.New("accesstoken: invalid token")
	// ErrExpired is returned by Tokens.Verify for a token past its
	// expiry, and by the login link calls for a link of such a token.
	ErrExpired = errors.New("accesstoken: token expired")
	// ErrRevoked is returned by Tokens.Verify for a revoked token, by
	// Tokens.Revoke for one revoked already, and by the login link calls
	// for a link of such a token.
	ErrRevoked = errors.New("accesstoken: token revoked")
	// ErrLoginLinkInvalid is returned by Tokens.UseLoginLink for a secret
	// that is not a usable login link: malformed, unknown, used already or
	// expired. Which of these it was is not told (401 over HTTP).
	ErrLoginLinkInvalid = errors.New("accesstoken: login link unknown, used or expired")
	// ErrNotHuman is returned by Tokens.CreateLoginLink for an agent's
	// token: the web UI signs in people, not agents.
	ErrNotHuman = errors.New("accesstoken: not a human token")
)
