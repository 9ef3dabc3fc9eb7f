package memory

import (
	"encoding/json"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

// BlockSpec describes a block to create.
type BlockSpec struct {
	Label       string
	Description string
	Type        blocks.Type       // default Working
	Schema      schema.Schema     // default schema.Text{}; schema.Log{} for a Log-type block
	Permission  blocks.Permission // the owner's permission; default ReadWrite
	CharLimit   int               // default blocks.DefaultCharLimit
	Pinned      bool
	Priority    int
	// Value, when set, is the initial content (as for Document.SetValue),
	// written by the system in the creating change.
	Value any
}

// BlockMeta is what the store knows about a block without loading its CRDT
// document: metadata plus the rendered content as of the last persisted
// change.
type BlockMeta struct {
	ID          int64
	Owner       string
	Label       string
	Description string
	Type        blocks.Type
	Schema      schema.Schema
	// Permission is the caller's effective permission: the owner's, or the
	// one a share granted.
	Permission blocks.Permission
	CharLimit  int
	Pinned     bool
	Priority   int
	Rendered   string
	// SharedFrom is the owner when the block was shared with the caller.
	SharedFrom string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// SharedBlock is one share: a block and the agent it is shared with.
type SharedBlock struct {
	BlockMeta
	SharedWith string
	SharedAt   time.Time
}

// ArchivalEntry is one archival memory.
type ArchivalEntry struct {
	ID      int64
	Agent   string
	Content string
	// Metadata is the caller's JSON object. The first of "conversation",
	// "conversation_id", "session", "session_id", "thread", "thread_id"
	// holding a string other than "" or a number names the entry's
	// conversation (compared as JSON values: 3 and "3" are two): the
	// entry is then also found by the words of the owner's entries just
	// before and after it there, by id. An entry naming none is found by
	// the words of the owner's entries naming none just before and after
	// it, each when their CreatedAt differ by 1 second to 30 minutes
	// (notes taken as a conversation goes); a batch written at once or
	// entries further apart are indexed alone (docs/retrieval.md).
	Metadata map[string]any
	Tags     []string
	// CreatedAt is the insert's time when zero. A store keeps times as
	// Unix nanoseconds: one outside 1677-09-21 to 2262-04-11 is refused
	// (ErrInvalidArgument), here, in ValidFrom and in a message's.
	CreatedAt time.Time
	// ValidFrom defaults to CreatedAt; ValidTo is set when superseded.
	ValidFrom    time.Time
	ValidTo      *time.Time
	SupersededBy int64
	// Duplicate is set on what an insert returns when the entry was
	// already stored (a live entry of the agent with the same normalised
	// content and conversation, see Options.KeepDuplicates): the result
	// is that entry, with the insert's tags and metadata merged in. It is
	// never stored.
	Duplicate bool
}

// ArchivalQuery filters [Archival.List]. nil means defaults.
type ArchivalQuery struct {
	Limit             int // default 100
	Offset            int
	Tags              []string // entries having any of these tags
	IncludeSuperseded bool
	// Metadata filters (all must hold): search.MetadataFilter{Key, Equals}
	// or search.MetadataRangeFilter(key, min, max).
	Metadata []search.MetadataFilter
}

// Role of a message.
type Role string

// Message roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one tool invocation requested by an assistant message.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Message is one conversation message. A batch is one incoming event plus
// everything the agent did about it.
type Message struct {
	ID         int64
	Agent      string
	Role       Role
	Content    string
	Name       string
	ToolCalls  []ToolCall
	ToolCallID string
	BatchID    string
	Seq        int // position within the batch; 0 on append means "next"
	// CreatedAt is when the message was said: the append's time when
	// zero. Search indexes its date (UTC, "8 May 2023") with the message,
	// so an import that keeps a conversation's times lets questions that
	// name a day, month or year find it (docs/retrieval.md). Outside
	// 1677-09-21 to 2262-04-11 (Unix nanoseconds) it is refused.
	CreatedAt time.Time
}

// MessageQuery filters [Messages.List]. nil means all messages, oldest first.
type MessageQuery struct {
	AfterID int64  // only messages with ID > AfterID
	BatchID string // only this batch
	Limit   int    // 0 = no limit; with Newest, the newest Limit
	Newest  bool
	Since   time.Time
	Until   time.Time
}

// Batch is the state of one batch of messages.
type Batch struct {
	ID          string
	Agent       string
	Complete    bool
	CreatedAt   time.Time
	CompletedAt time.Time
}

// Summary condenses messages FirstMessageID..LastMessageID of one agent and
// folds in the summary before it (PreviousID).
type Summary struct {
	ID             int64
	Agent          string
	FirstMessageID int64
	LastMessageID  int64
	PreviousID     int64
	Content        string
	Model          string
	CreatedAt      time.Time
}

// Edit is a block edit that can be proposed, stored and applied later.
type Edit struct {
	Op      blocks.Op `json:"op"`
	Section string    `json:"section,omitempty"`
	Field   string    `json:"field,omitempty"`
	Text    string    `json:"text,omitempty"` // set/append/insert text
	Old     string    `json:"old,omitempty"`  // replace_text
	Value   any       `json:"value,omitempty"`
	Index   int       `json:"index,omitempty"` // list index / line number
	Delta   int64     `json:"delta,omitempty"`
}

// Proposal is an edit an agent proposed to a Partner/Human block.
type Proposal struct {
	ID        int64
	Owner     string
	Label     string
	Proposer  string
	Edit      Edit
	Reason    string
	Status    string // pending | approved | rejected
	CreatedAt time.Time
	DecidedAt time.Time
	DecidedBy string
	// Merge is set on consolidation's proposals (op OpMergeArchival) on
	// the archival memory of Owner (their proposer; Label is "" and Edit
	// the zero Edit): approving one applies the merge.
	Merge *ArchivalMerge
}
