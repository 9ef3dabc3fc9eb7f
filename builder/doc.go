// Package builder turns an agent's memory into the exact request a model
// sees: a system prompt of XML-tagged memory blocks and tool rules, a
// history compressed to fit the model's budget, tool definitions, and
// Metadata saying what went in, what was left out and why.
//
// # Building
//
//	entropy := store.Agent("entropy")
//	req, err := builder.New(entropy, cfg).
//	    WithMessages(entropy.Messages()). // history source
//	    WithTools(registry).
//	    WithBaseInstructions("You are Entropy, a task breakdown specialist.").
//	    WithToolRules(rules...).
//	    WithModelInfo(info).
//	    WithBatchBlocks("ephemeral-block-id").
//	    Build(ctx)
//
// A Builder is a value: each With* method returns a modified copy (slices
// are copied, never shared), so a partly configured Builder can be kept and
// reused for many requests, and for other agents with ForAgent.
//
// The memory read is an Agent: the agent's handle (*memory.Agent), or a
// wrapper of one, since Agent is only the six methods a build calls (block
// listings and their stamp, the agent's messages for summaries, its
// archival memory for recall). The context library and the profile
// (LibraryStore, ProfileStore) are found on the agent; persisted token
// counts are ContextConfig.TokenCounts (the store).
//
// # System prompt
//
// Sections, joined by a blank line: base instructions; the context library
// (when configured); Core blocks; Working blocks that are pinned or named by
// the batch (WithBatchBlocks); attachments (WithAttachment); the skills
// list; the activity section (an optional ActivityRenderer); tool rules
// (toolrules.Render); recalled memories; the environment. Within a section, the
// agent's own blocks come in creation order, then blocks shared with it.
// Each block renders as
//
//	<block:label permission="ReadWrite">
//	Block description (unless OmitDescriptions)
//
//	rendered content
//	</block:label>
//
// with shared_from="owner" for shared blocks and chars="used/limit" when
// ShowCharUsage is set. Content, descriptions and every other text placed in
// the prompt have "<block:" and "</block:" (any case) escaped, labels are
// sanitised and attribute values escaped, so no memory content can open or
// close a tag (see RenderBlock).
//
// With ContextConfig.PrefixCacheOrder the static sections (base
// instructions, tool rules) come first, then memory, then per-request
// sections. Metadata.StablePrefixEnd marks where the leading static
// sections end, and StablePrefixHash is a sha256 of the tool definitions and
// that prefix: equal hashes mean a provider's prefix cache can be reused.
// The same inputs always give the same bytes: no map iteration order and no
// clock reach the prompt.
//
// # Budgets
//
// ModelContextLimits (per model via ContextConfig.ModelOverrides):
// MaxTokens - ReservedResponseTokens is the input budget. Memory (blocks
// and attachments) gets MemoryTokens, capped by what the input budget leaves
// beside the fixed sections and tools; Working blocks and non-essential
// attachments beyond it are dropped, highest Priority number first, and
// reported in Metadata.BlocksDropped. Core blocks and essential attachments
// are never dropped. The history gets HistoryTokens, capped by what is left
// after the system prompt and tools, and goes through the configured
// compress.MessageCompressor with MaxMessagesCap; the active batch (and the
// current user message in it) is never dropped. A request that cannot fit
// anyway is built and flagged Metadata.OverBudget.
//
// The zero ContextConfig means the documented defaults, the same as
// DefaultConfig: 128k tokens with 16k for memory and 8k reserved for the
// reply, descriptions shown, at most 50 history messages. A negative limit
// means none.
//
// # Layers
//
// WithEnvironment adds the date and time (ContextConfig.Clock), the engram
// version and the tools at the end of the system prompt.
// ContextConfig.Recall recalls the agent's archival entries relevant to the
// current user message (a Recaller; StoreRecaller by default), drops those
// a block already says and duplicates, and renders the rest as
// recalled_memories with ids. WithTurnContext puts this turn's artifacts in
// the current user message (file_context tags), never in the system
// prompt. ContextConfig.Library keeps artifacts of earlier turns (Promote
// after a turn) in a context_library section after the base instructions:
// deduplicated by id, last write wins, first-seen order, growing only, so
// the prefix stays cacheable; an artifact the turn names again with the
// same content becomes a reference. Over its budget, recoverable artifacts
// become previews (structure and first characters) in first-seen order;
// non-recoverable ones are never compacted.
//
// When the request does not fit its input budget, layers give way in
// ContextConfig.TruncationOrder (DefaultTruncationOrder: history, recalled
// memories, library, Working memory); base instructions, tool rules, Core
// blocks, the environment and the current message with its artifacts never
// do. With TrimTextBlocks a Text block is cut by whole lines with a marker
// instead of dropped.
//
// # Providers
//
// Request.OpenAI, Request.Anthropic and Request.Gemini return request
// bodies for those APIs with cache hints: prompt_cache_key; cache_control
// at the end of the stable prefix, the end of memory and the last message;
// a cachedContents body (Request.GeminiCache) for the stable prefix.
// Section.Hash, Metadata.ToolsHash and Metadata.PrefixChange say which
// layer changed the prefix since the previous build. Metadata.Timings
// times each phase; ContextConfig.Logger receives a record for every drop,
// trim and compaction.
//
// # Model adjustments
//
// Tool results without their call, and tool calls without a result, are
// removed at the edges of the history. ModelInfo.NoSystemRole sends the
// system prompt as the first user message; ModelInfo.UserFirst (Gemini
// style) inserts a placeholder user message when the history would not start
// with one, drops empty messages and merges consecutive user messages.
//
// # Tokens
//
// Counting is behind TokenCounter. The default is real BPE from
// github.com/tiktoken-go/tokenizer: o200k_base for the gpt-4o, gpt-4.1,
// gpt-5 and o-series families, cl100k_base for the rest (EncodingForModel).
// Tokenizers are made lazily, once per Cache (the library loads each
// vocabulary once per process, on first use), and counts are cached by a
// hash of the text, so blocks and messages that did not change are not
// tokenized again. CharCounter (chars/4) is the cheap fallback: it
// over-counts English prose, a safe but loose estimate (by how much:
// TestCharsPerTokenError, figure in docs/performance.md).
//
// # Caching
//
// A Cache (ContextConfig.Cache) also remembers the history read from each
// source: later builds fetch only messages newer than the last one seen and
// ask for batch states only while a relevant batch is not known complete.
// It keeps each agent's block listings (own and shared) with the
// memory.BlocksStamp they were read at, and the blocks' renderings: a warm
// build reads only the stamp (one indexed query; on SQLite a PRAGMA
// data_version read while nothing was committed) and lists and renders the
// blocks again only after a change to a block the agent sees or to its
// shares, made by this process or any other on the same database file.
package builder
