package driver

// A WriteLock names something a write transaction locks where the engine
// lets writers run in parallel (PostgreSQL; Dialect.LockWrites): a block,
// so that one block's writers take turns (limits, permissions and CRDT
// catch-up read what the previous writer committed), or an agent, for
// what is the agent's as a whole (its archival entries and messages, its
// blocks generation, its quota); or the whole store, for what changes
// every vector at once (searchindex.Index.Reembed's swap, the vector tables' setup): every
// write transaction holds the store shared, these exclusively. Where the
// engine has one writer at a time (SQLite) the write transaction holds
// the whole database and WriteLocks cost nothing.
//
// A transaction takes its locks in one order, so that no two wait for
// each other: the store, then blocks, then agents, each kind by key. One
// that needs more than it took at first (a block write that rotates log
// entries into its owner's archival) may only add locks that come after
// every lock it holds; the store's exclusive lock only as its first.
type WriteLock struct {
	kind  WriteLockKind
	id    int64
	agent string
}

// WriteLockKind is what a WriteLock locks.
type WriteLockKind int

// WriteLock kinds, in the order a transaction takes them.
const (
	LockStore WriteLockKind = 1 + iota
	LockBlock
	LockAgent
)

// StoreLock is the whole store, exclusively.
func StoreLock() WriteLock { return WriteLock{kind: LockStore} }

// BlockLock is the lock of the block with id.
func BlockLock(id int64) WriteLock { return WriteLock{kind: LockBlock, id: id} }

// AgentLock is the lock of agent.
func AgentLock(agent string) WriteLock { return WriteLock{kind: LockAgent, agent: agent} }

// Kind returns what l locks.
func (l WriteLock) Kind() WriteLockKind { return l.kind }

// Block returns the id of a LockBlock.
func (l WriteLock) Block() int64 { return l.id }

// Agent returns the agent of a LockAgent.
func (l WriteLock) Agent() string { return l.agent }
