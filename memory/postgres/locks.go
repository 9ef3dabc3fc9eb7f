package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/engram-go/engram/driver"
)

// Advisory lock keys. Writers do not exclude each other as a whole: a
// write transaction takes transaction-scoped advisory locks
// (pg_advisory_xact_lock, released at commit or rollback, so poolers in
// transaction mode keep working) on what it touches, as 64-bit keys whose
// top byte is the class and whose rest the object: the store (storeKey),
// a block (its id), an agent (a hash of its name), or one of the named
// locks below. A transaction takes its locks in key order (classes in the
// order of their numbers), adding later ones only above those it holds,
// so no two transactions wait for each other in a cycle. Keys of
// different objects that collide only make their writers wait for each
// other.
//
// storeKey (class 0) is held shared by every write transaction and
// exclusively by what rewrites every vector (driver.StoreLock). It is the
// key engram's releases before parallel writers held exclusively for
// every write, so a process of such a release never writes beside a
// process of this one.
const storeKey = 0x656e6772616d // "engram"

const (
	lockClassBlock = 1
	lockClassAgent = 2
	lockClassNamed = 3
	// lockClassTextPart is a stored text partition's, one per kind and
	// bucket of 256 of owners, keyed in SQL (engram_text_part_key,
	// migration 0048): taken shared by the triggers that drop the part,
	// and tried exclusively by a save of it (TryLockTextPart), which never
	// waits for it.
	lockClassTextPart = 4
)

// Named locks (class lockClassNamed).
const (
	// lockTextLogTrim and lockVecLogTrim are the change logs' trimmers
	// (engram_log_trim, migration 0023: the literal keys are there).
	lockTextLogTrim = lockClassNamed<<56 | 2
	lockVecLogTrim  = lockClassNamed<<56 | 3
	// lockAnalyze is the growth analyzer's (analyze.go): one process
	// analyzes at a time.
	lockAnalyze = lockClassNamed<<56 | 4
)

// TryLockTextPart tries to take the lock of owner's stored text
// partition of kind exclusively in the transaction ex, without waiting
// (searchindex.TextPartLocker). The triggers that drop the part (a delete
// of or change to one of owner's rows) take it shared: held, the save sees
// every such write committed and makes any later one wait for its commit
// (whose DELETE then sees the part); not held, such a write is in flight
// and the part is not saved. Waiting for nothing, a save is never part of
// a deadlock.
func (SearchDialect) TryLockTextPart(ctx context.Context, ex driver.Execer, kind int, owner string) (bool, error) {
	var ok bool
	if err := ex.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock(engram_text_part_key(?, ?))`, kind, owner).Scan(&ok); err != nil {
		return false, fmt.Errorf("lock the stored text partition of %q: %w", owner, err)
	}
	return ok, nil
}

// lockKey is the advisory key of object v of class.
func lockKey(class int, v uint64) int64 { return int64(class)<<56 | int64(v&(1<<56-1)) }

// agentKey hashes an agent's name into its key (FNV-1a).
func agentKey(agent string) int64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(agent); i++ {
		h ^= uint64(agent[i])
		h *= 1099511628211
	}
	return lockKey(lockClassAgent, h)
}

// lockKeys returns the advisory keys of locks, ascending, each once.
func lockKeys(locks []driver.WriteLock) []int64 {
	keys := make([]int64, 0, len(locks))
	for _, l := range locks {
		switch l.Kind() {
		case driver.LockStore:
			keys = append(keys, storeKey)
		case driver.LockBlock:
			keys = append(keys, lockKey(lockClassBlock, uint64(l.Block())))
		case driver.LockAgent:
			keys = append(keys, agentKey(l.Agent()))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// lockCalls is the select list taking the advisory locks keys, one per
// "?", in order (a select list is evaluated left to right): storeKey
// shared unless storeExclusive, every other key exclusively.
func lockCalls(keys []int64, storeExclusive bool) string {
	calls := make([]string, len(keys))
	for i, k := range keys {
		calls[i] = "pg_advisory_xact_lock(?)"
		if k == storeKey && !storeExclusive {
			calls[i] = "pg_advisory_xact_lock_shared(?)"
		}
	}
	return strings.Join(calls, ", ")
}

// LockWrites takes locks' advisory locks in the transaction ex, in key
// order, in one statement (the store's exclusively); each waits up to the
// transaction's lock_timeout.
func (SearchDialect) LockWrites(ctx context.Context, ex driver.Execer, locks []driver.WriteLock) error {
	keys := lockKeys(locks)
	if len(keys) == 0 {
		return nil
	}
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	if _, err := ex.ExecContext(ctx, "SELECT "+lockCalls(keys, true), args...); err != nil {
		return fmt.Errorf("take the write locks: %w", err)
	}
	return nil
}
