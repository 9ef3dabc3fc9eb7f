package blocks

import (
	"fmt"
	"strings"
)

// Type says how a block reaches a model's context.
type Type string

// Block types.
const (
	// Core blocks are always in context and never pruned.
	Core Type = "core"
	// Working blocks are in context when pinned or named by the current batch.
	Working Type = "working"
	// Archival blocks are searchable and never rendered whole.
	Archival Type = "archival"
	// Log blocks hold append-only entries.
	Log Type = "log"
)

// ParseType parses a block type name (case-insensitive).
func ParseType(s string) (Type, error) {
	switch t := Type(strings.ToLower(strings.TrimSpace(s))); t {
	case Core, Working, Archival, Log:
		return t, nil
	}
	return "", fmt.Errorf("%w: block type %q (valid: core, working, archival, log)", ErrUnknownName, s)
}

// Permission is what an agent may do to a block. Permissions are ordered:
// ReadOnly < Partner < Human < Append < ReadWrite < Admin.
type Permission int

// Permissions, weakest first.
const (
	// ReadOnly: no writes.
	ReadOnly Permission = iota + 1
	// Partner: writes need approval from the partner (the Approver).
	Partner
	// Human: writes need approval from a human (the Approver).
	Human
	// Append: only appending operations.
	Append
	// ReadWrite: any content operation, but no deletion or reconfiguration.
	ReadWrite
	// Admin: everything, including delete and reconfiguration.
	Admin
)

var permissionNames = [...]string{"", "ReadOnly", "Partner", "Human", "Append", "ReadWrite", "Admin"}

func (p Permission) String() string {
	if p >= ReadOnly && p <= Admin {
		return permissionNames[p]
	}
	return fmt.Sprintf("Permission(%d)", int(p))
}

// Valid reports whether p is one of the six permissions.
func (p Permission) Valid() bool { return p >= ReadOnly && p <= Admin }

// ParsePermission parses a permission name ("ReadWrite", "read_write",
// "readwrite" all work).
func ParsePermission(s string) (Permission, error) {
	for p := ReadOnly; p <= Admin; p++ { // the stored, canonical spelling
		if permissionNames[p] == s {
			return p, nil
		}
	}
	norm := strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(s))
	for p := ReadOnly; p <= Admin; p++ {
		if strings.ToLower(permissionNames[p]) == norm {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: permission %q (valid: %s; case, '_' and '-' do not matter)", ErrUnknownName, s, strings.Join(permissionNames[ReadOnly:Admin+1], ", "))
}

// MarshalText writes the permission's name.
func (p Permission) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("%w: invalid permission %d", ErrPermission, int(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText parses a permission name.
func (p *Permission) UnmarshalText(b []byte) error {
	v, err := ParsePermission(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Actor says who performs an operation. Every mutating method takes it
// last: doc.SetText("Hello", blocks.System).
//
// System bypasses all permission checks. Agent ("") means the accessor of
// the Document view the method is called on. Any other value must name that
// accessor: a view for one agent cannot act as another.
type Actor string

const (
	// System is the trusted caller: no permission checks. Character limits
	// and schema validation still apply.
	System Actor = "@system"
	// Agent acts as the view's accessor with its effective permission.
	Agent Actor = ""
)

// Op names an operation. It is recorded in each change's history.
type Op string

// Operations, as recorded in history and passed to an Approver.
const (
	OpCreate            Op = "create"
	OpSetText           Op = "set_text"
	OpAppendText        Op = "append_text"
	OpReplaceText       Op = "replace_text"
	OpInsertText        Op = "insert_text"
	OpSetField          Op = "set_field"
	OpAppendToListField Op = "append_to_list_field"
	OpIncrementCounter  Op = "increment_counter"
	OpPushItem          Op = "push_item"
	OpInsertItem        Op = "insert_item"
	OpDeleteItem        Op = "delete_item"
	OpCheckItem         Op = "check_item"
	OpAppendLogEntry    Op = "append_log_entry"
	OpTrimLog           Op = "trim_log"
	OpSetValue          Op = "set_value"
	OpRestore           Op = "restore"
	OpReconfigure       Op = "reconfigure"
	OpDelete            Op = "delete"
	OpMerge             Op = "merge"
	OpRebase            Op = "rebase" // the first change of a new epoch (see Document.Rebased)
	// OpToolCall is not a block operation: an Approver sees it when a tool
	// rule (toolrules.RequiresConsent) asks for consent to a tool call, with
	// the tool's name in Field (see tools.ConsentApprover).
	OpToolCall Op = "tool_call"
)

// class is the permission class of an operation.
type class int

const (
	classAppend class = iota // allowed from Append upwards
	classWrite               // allowed from ReadWrite upwards
	classAdmin               // Admin only
)

func (o Op) class() class {
	switch o {
	case OpAppendText, OpAppendToListField, OpIncrementCounter, OpPushItem, OpAppendLogEntry:
		return classAppend
	case OpTrimLog, OpReconfigure, OpDelete:
		return classAdmin
	}
	return classWrite
}

// IsAppend reports whether o is an appending operation, the only kind an
// Append permission allows.
func (o Op) IsAppend() bool { return o.class() == classAppend }

// ApprovalRequest describes a Partner/Human write awaiting a decision.
type ApprovalRequest struct {
	Block      string     `json:"block"`
	Owner      string     `json:"owner,omitempty"`
	Agent      string     `json:"agent"`
	Permission Permission `json:"permission"`
	Op         Op         `json:"op"`
	Section    string     `json:"section,omitempty"`
	Field      string     `json:"field,omitempty"`
	Args       []any      `json:"args,omitempty"`
}

// Approver decides Partner and Human writes. Without one they are denied.
// It is called without any Document lock held, so it may block (ask a human)
// or read the document.
type Approver interface {
	Approve(req ApprovalRequest) (bool, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(req ApprovalRequest) (bool, error)

// Approve calls f.
func (f ApproverFunc) Approve(req ApprovalRequest) (bool, error) { return f(req) }
