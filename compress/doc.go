// Package compress fits an agent's message history into a token budget
// without breaking its structure.
//
// # Batches
//
// Every message carries a BatchID: a batch is one incoming event plus
// everything the agent did about it, and it is complete once
// memory.Messages.CompleteBatch was called for it. Compression works on whole
// batches only:
//
//   - complete batches are kept, summarized or dropped as a whole;
//   - the active batch (Input.ActiveBatch, the one being processed now) is
//     never compressed or dropped, even when it alone exceeds the budget
//     (Result.OverBudget says so);
//   - incomplete batches other than the active one are left out
//     (Result.Excluded): they are still being written, or were abandoned.
//
// A tool call and its result are never separated: an assistant message with
// ToolCalls and the tool messages answering them (matching ToolCallID) form
// one unit even when they sit in different batches, and the batches of a
// unit share one fate. A unit holding the active batch is kept whole; a unit
// holding another incomplete batch is left out whole. Messages without a
// BatchID are treated as complete batches of one message.
//
// The output keeps the input's (chronological) order.
//
// # Strategies
//
// [Truncate] keeps the most recent complete batches, newest first, while they
// fit KeepRecent messages and the token budget, and drops the rest.
//
// [RecursiveSummarization] folds older complete batches into a running
// summary through a [Summarizer], ChunkSize messages at a time, each new
// summary folding in the previous one (memory.Summary.PreviousID, and the
// previous text passed to Summarize). Summaries are stored with
// memory.Messages.SaveSummary and found again with LatestSummary, so a batch is
// summarized once, not on every request. The summary is rendered as a user
// message ahead of the kept history ([SummaryMessage]).
//
// Two summarizers ship: [OpenAISummarizer], for any OpenAI-compatible
// /chat/completions endpoint, and [Extractive], a deterministic offline one
// that keeps the first sentence of user messages, tool results and replies.
//
// # Tokens
//
// Budgets are in tokens, counted by a [TokenCounter] (the builder passes its
// BPE counter); [MessageTokens] is the cost of one message. Without a counter
// a chars/4 estimate is used.
package compress
