package driver

// ChangeLog is how the in-process caches read one of an engine's change
// logs (search_text_log, search_vec_log): tables whose entries (kind, id)
// name the rows a write changed, written in the writer's own transaction
// (Dialect.ChangeLog).
//
// A reader never trusts the order in which entries were numbered to be the
// order in which they committed: writers on PostgreSQL run in parallel, so
// an entry numbered early may commit late. Instead each entry has a
// position (Position) and each read snapshot says which positions it
// holds, as PostgreSQL's snapshots do: every position below xmin, and
// those below xmax that are not in xip (the transactions that were still
// running). A cache remembers the snapshot it caught up to; its next
// catch-up reads the entries that snapshot did not hold. An entry whose
// transaction runs long is held by no snapshot until it commits, so it
// delays nothing but itself and is never skipped. On an engine whose
// writers commit one at a time (SQLite) the position is the entry's
// sequence number and a snapshot holds the positions up to the log's last
// (xmin = xmax = last + 1, xip empty).
type ChangeLog struct {
	// Position is the column holding an entry's position.
	Position string
	// Bounds is the statement reading, as the first statement of a
	// SnapshotIsolation transaction (or alone), what its snapshot holds
	// of the log: one row of xmin, xmax (integers), xip (a JSON array of
	// integers, ascending) and floor: entries whose position is below
	// floor may have been trimmed from the log (0: none was).
	Bounds string
	// Trim is the statement trimming the log to about its last "?"
	// entries, in a write transaction; it removes only entries every
	// snapshot from then on holds, and moves floor past them.
	Trim string
}
