package tools

// registry lists every tool in listing order.
var registry = []*toolDef{
	define(BlockAppend,
		"Add text to the end of one of your memory blocks (a text block, or a text section of a block). "+
			"Use it to record new information that should stay in your context, such as facts about the user, yourself or the task.",
		nil, blockAppend).with(Hints{Title: "Append to a memory block"}),
	define(BlockReplace,
		"Replace one exact passage of a text memory block with new text, or delete it (new = \"\"). "+
			"old must occur exactly once in the block's current content: copy it from the block, with enough surrounding words to be unique. "+
			"Use it to correct or update what a block says.",
		nil, blockReplace).with(Hints{Title: "Replace text in a memory block", Destructive: true}),
	define(BlockSetField,
		"Set one field of a memory block made of fields (shown as \"field: value\" lines), or clear an optional field with value null.",
		[]string{"value"}, blockSetField).with(Hints{Title: "Set a field of a memory block", Destructive: true, Idempotent: true}).
		typed("value", jsonValue("string", "number", "boolean", "array", "object", "null")),
	define(BlockPushItem,
		"Add an item at the end of a list memory block (shown as \"1. item\" or \"[ ] item\" lines), "+
			"or, with field, to a list field of a block made of fields.",
		nil, blockPushItem).with(Hints{Title: "Add an item to a list block"}).
		typed("item", jsonValue("string", "number", "boolean")),
	define(BlockInsertLine,
		"Insert a new line into a text memory block at a given line number; the lines after it move down.",
		nil, blockInsertLine).with(Hints{Title: "Insert a line into a memory block"}),
	define(LogAppend,
		"Add a timestamped entry to a log memory block. Log entries cannot be changed or removed later.",
		nil, logAppend).with(Hints{Title: "Add a log entry"}),
	define(ArchivalInsert,
		"Save something to your archival memory: long-term storage outside your context for facts and details you may need later. "+
			"Find it again with archival_search.",
		nil, archivalInsert).with(Hints{Title: "Save to archival memory"}),
	define(ArchivalSearch,
		"Search your archival memory. Returns the best matches as JSON, each with its id, creation time, tags, "+
			"a snippet (matching words between « and »), the full content when the snippet does not show all of it, "+
			"and a relevance score (higher is better) with how it was ranked.",
		nil, archivalSearch).with(Hints{Title: "Search archival memory", ReadOnly: true, Idempotent: true}),
	define(ArchivalConsolidate,
		"Find near-duplicate entries in your archival memory (the same fact saved several times, in other words or with small changes) "+
			"and propose merging each group into one entry. Merges are proposals that take effect once approved; nothing is deleted "+
			"(merged entries stay in history). Returns the groups found as JSON.",
		nil, archivalConsolidate).with(Hints{Title: "Consolidate archival memory"}),
	define(ConversationSearch,
		"Search your past conversation messages, including ones no longer in your context. Returns matching messages as JSON, "+
			"each with its id, role, time, a snippet (matching words between « and ») and a relevance score (higher is better).",
		nil, conversationSearch).with(Hints{Title: "Search past conversation", ReadOnly: true, Idempotent: true}),
	define(ProposeEdit,
		"Propose an edit to a memory block whose changes need approval (permission Human or Partner). "+
			"The edit is checked, stored as a proposal and applied only once approved; returns the proposal number.",
		nil, proposeEdit).with(Hints{Title: "Propose a memory edit for approval"}).
		typed("value", jsonValue("string", "number", "boolean", "array", "object", "null")),
	define(LoadSkill,
		"Load the full instructions of one of your skills (listed under \"Available skills\" by name and description). "+
			"Call it before following a skill; the instructions come back as text.",
		nil, loadSkill).with(Hints{Title: "Load a skill", ReadOnly: true, Idempotent: true}),
}
