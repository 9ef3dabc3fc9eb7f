package openaihttp

import (
	"errors"
	"fmt"
	"time"
)

// Steps of a request that an *Error can name.
const (
	OpBuild  = "build request" // the request could not be built
	OpSend   = "send"          // the request could not be sent or answered
	OpRead   = "read response" // the response body could not be read
	OpStatus = "status"        // the server answered with a status other than 200
	OpCheck  = "check"         // the caller's check rejected a 200 body
)

// ErrInvalidURL is the error of an OpBuild *Error for a URL that does not
// parse (the parser's own message would quote it, password included).
var ErrInvalidURL = errors.New("invalid URL (percent-encode special characters in a user name or password)")

// Error is a failed attempt, and what Post returns when it gives up.
//
// Only the error of a check is wrapped (Unwrap): network and read errors
// are described, not wrapped, so that an attempt's own timeout cannot be
// mistaken for the end of the caller's context.
type Error struct {
	// Op is the step that failed (OpBuild, OpSend, OpRead, OpStatus,
	// OpCheck).
	Op string
	// URL is the endpoint redacted (Client.SafeURL): it never holds a
	// password or a query value such as an api-key.
	URL string
	// Detail is Client.Detail, shown after the URL of an OpStatus error.
	Detail string
	// StatusCode and Message describe an OpStatus error: the HTTP status
	// and the message found in the response body.
	StatusCode int
	Message    string
	// Err is the underlying error of the other steps.
	Err error
	// Retryable reports whether the attempt was worth repeating (429, 5xx,
	// network and read errors); RetryAfter is the wait the server asked
	// for (0: none).
	Retryable  bool
	RetryAfter time.Duration
	// Attempts is how many attempts Post made (0 in the error of an
	// attempt that Post was about to retry).
	Attempts int
}

func (e *Error) Error() string {
	var s string
	switch e.Op {
	case OpBuild:
		s = fmt.Sprintf("POST %s: build request: %v", e.URL, e.Err)
	case OpRead:
		s = fmt.Sprintf("POST %s: read response: %v", e.URL, e.Err)
	case OpStatus:
		target := e.URL
		if e.Detail != "" {
			target += " " + e.Detail
		}
		s = fmt.Sprintf("POST %s: HTTP %d: %s", target, e.StatusCode, e.Message)
	case OpCheck:
		s = e.Err.Error()
	default:
		s = fmt.Sprintf("POST %s: %v", e.URL, e.Err)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Unwrap returns the error of an OpCheck failure, nil for the other steps.
func (e *Error) Unwrap() error {
	if e.Op == OpCheck {
		return e.Err
	}
	return nil
}

// CanceledError is returned by Post when its context ends.
type CanceledError struct {
	// Cause is context.Cause of the context.
	Cause error
	// Last is the failed attempt Post was waiting to retry, nil if the
	// context ended during an attempt.
	Last *Error
}

func (e *CanceledError) Error() string {
	if e.Last != nil {
		return fmt.Sprintf("%v (while waiting to retry: %v)", e.Cause, e.Last)
	}
	return fmt.Sprint(e.Cause)
}

// Unwrap returns Cause.
func (e *CanceledError) Unwrap() error { return e.Cause }

// Wrap turns an error of Post into its caller's. A *CanceledError becomes
// "<prefix>: <cause>", plus " (while waiting to retry: <sentinel>: <last
// attempt>)" when Post was waiting, and wraps only the cause; any other
// error becomes "<sentinel>: <err>" and wraps both.
func Wrap(err error, sentinel error, prefix string) error {
	var ce *CanceledError
	if errors.As(err, &ce) {
		if ce.Last != nil {
			return fmt.Errorf("%s: %w (while waiting to retry: %v: %v)", prefix, ce.Cause, sentinel, ce.Last)
		}
		return fmt.Errorf("%s: %w", prefix, ce.Cause)
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}
