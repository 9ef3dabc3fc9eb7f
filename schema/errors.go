package schema

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid is wrapped by every validation failure: a value that does not
	// fit its schema, or a schema definition that is malformed.
	ErrInvalid = errors.New("schema: invalid")
)

// FieldError says which field (path) failed and why. It matches ErrInvalid
// with errors.Is.
type FieldError struct {
	Field  string // dotted path: "status", "tasks[2]", "diagnostics.errors"
	Reason string
	Err    error // ErrInvalid
	// Definition: the schema itself is malformed (see Check), not a value.
	Definition bool
}

func (e *FieldError) Error() string {
	what := "invalid value"
	if e.Definition {
		what = "invalid schema"
	}
	if e.Field == "" {
		return fmt.Sprintf("schema: %s: %s", what, e.Reason)
	}
	return fmt.Sprintf("schema: %s for field %q: %s", what, e.Field, e.Reason)
}

func (e *FieldError) Unwrap() error { return e.Err }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...), Err: ErrInvalid}
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
