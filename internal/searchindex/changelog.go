package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/engram-go/engram/driver"
)

// logPos is a read snapshot's hold on a change log (see driver.ChangeLog): the
// positions below xmin, and those below xmax not in xip. The zero value
// is no position (a cache never loaded).
type logPos struct {
	xmin, xmax int64
	xip        []int64 // ascending
}

// valid reports whether p is a position read from a log.
func (p logPos) valid() bool { return p.xmax > 0 }

// holds reports whether the snapshot of p holds the entry at position x.
func (p logPos) holds(x int64) bool {
	if x < p.xmin {
		return true
	}
	if x >= p.xmax {
		return false
	}
	_, running := slices.BinarySearch(p.xip, x)
	return !running
}

// lowest is the lowest position of an entry p does not hold: its xmax, or
// the first transaction running at it.
func (p logPos) lowest() int64 {
	if len(p.xip) > 0 {
		return p.xip[0]
	}
	return p.xmax
}

// covers reports whether p holds every entry q holds: p was read no
// earlier than q.
func (p logPos) covers(q logPos) bool {
	if !q.valid() {
		return true
	}
	if !p.valid() {
		return false
	}
	if q.xmax > p.xmax {
		// q holds [p.xmax, q.xmax) but for its running transactions.
		if p.xmax < q.xmin {
			return false
		}
		lo, _ := slices.BinarySearch(q.xip, p.xmax)
		if int64(len(q.xip)-lo) != q.xmax-p.xmax {
			return false
		}
	}
	for _, x := range p.xip {
		if x < q.xmax && q.holds(x) {
			return false
		}
	}
	return true
}

// equal reports whether p and q are the same position.
func (p logPos) equal(q logPos) bool {
	return p.xmin == q.xmin && p.xmax == q.xmax && slices.Equal(p.xip, q.xip)
}

// later returns whichever of p and q was read later (covers the other).
func later(p, q logPos) logPos {
	if p.covers(q) {
		return p
	}
	return q
}

// trimmed reports whether the log may have lost entries p does not hold
// (its floor passed p's xmin): what changed since p is unknown.
func (p logPos) trimmed(floor int64) bool { return floor > p.xmin }

// changeLog is one log table as the caches read it through a dialect.
type changeLog struct {
	table string
	driver.ChangeLog
	idList func(n int) (from, id string) // driver.Dialect.IDList
	// prep returns the Index's prepared statement for a query (nil: none):
	// every load and catch-up reads the bounds, and parsing the statement
	// anew cost SQLite more than running it.
	prep func(ctx context.Context, q string) (*sql.Stmt, error)
}

func newChangeLog(d driver.Dialect, table string) *changeLog {
	return &changeLog{table: table, ChangeLog: d.ChangeLog(table), idList: d.IDList}
}

// since is the condition selecting the entries p does not hold, with its
// arguments.
func (l *changeLog) since(p logPos) (string, []any) {
	pos := l.Position
	if len(p.xip) == 0 {
		return pos + ` >= ?`, []any{p.xmax}
	}
	xip, _ := json.Marshal(p.xip)
	from, id := l.idList(len(p.xip))
	return fmt.Sprintf(`%[1]s >= ? AND (%[1]s >= ? OR %[1]s IN (SELECT %[2]s FROM %[3]s))`, pos, id, from),
		[]any{p.xmin, p.xmax, string(xip)}
}

// changedSince is the statement reading the log's bounds (scanBounds)
// and whether it holds an entry p does not: one indexed lookup when
// nothing changed. It asks for the first such entry in position order,
// not whether one EXISTS: PostgreSQL's generic plan for a prepared EXISTS
// (chosen after five runs: a scan that may stop at its first row looks
// cheap to it) read the whole log whenever nothing had changed, which is
// every search of a quiet store.
func (l *changeLog) changedSince(p logPos) (string, []any) {
	where, args := l.since(p)
	return `SELECT b.*, (SELECT ` + l.Position + ` FROM ` + l.table + ` WHERE ` + where + ` ORDER BY ` + l.Position + ` LIMIT 1) IS NOT NULL FROM (` + l.Bounds + `) AS b`, args
}

// scanBounds reads a Bounds row (and dest's further columns).
func scanBounds(row interface{ Scan(...any) error }, p *logPos, floor *int64, dest ...any) error {
	var xip string
	if err := row.Scan(append([]any{&p.xmin, &p.xmax, &xip, floor}, dest...)...); err != nil {
		return err
	}
	var err error
	p.xip, err = parseXip(xip)
	return err
}

// parseXip reads a Bounds row's running transactions (a JSON array),
// sorted; nil when there are none.
func parseXip(xip string) ([]int64, error) {
	var xs []int64
	if xip = strings.TrimSpace(xip); xip != "" && xip != "[]" {
		if err := json.Unmarshal([]byte(xip), &xs); err != nil {
			return nil, fmt.Errorf("log snapshot's running transactions %q: %w", xip, err)
		}
		slices.Sort(xs)
	}
	return xs, nil
}

// read opens the read transaction a cache catches up in and reads the
// log's bounds in it, so the position and the rows read agree: iso is the
// isolation that makes the transaction one snapshot
// (driver.Dialect.SnapshotIsolation). The caller rolls tx back.
func (l *changeLog) read(ctx context.Context, db *sql.DB, iso sql.IsolationLevel, what string) (tx *sql.Tx, pos logPos, floor int64, err error) {
	// Prepared before the transaction takes a pooled connection: preparing
	// a statement the Index does not hold yet takes one of its own, and a
	// pool of one (an in-memory store's) would wait for ever.
	var st *sql.Stmt
	if l.prep != nil {
		st, _ = l.prep(ctx, l.Bounds)
	}
	tx, err = db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: iso})
	if err != nil {
		return nil, pos, 0, fmt.Errorf("search: %s: %w", what, err)
	}
	bounds, done := inTx(ctx, tx, st)
	defer done()
	if err := scanBounds(queryRow(ctx, bounds, l.Bounds), &pos, &floor); err != nil {
		tx.Rollback()
		return nil, pos, 0, fmt.Errorf("search: %s: read log: %w", what, err)
	}
	return tx, pos, floor, nil
}

// logEntry is one log entry's place: its position and its sequence
// number (which orders the entries of one transaction).
type logEntry struct{ pos, seq int64 }

// before reports whether e was written before f in the same transaction.
func (e logEntry) before(f logEntry) bool { return e.pos == f.pos && e.seq < f.seq }

// compareEntries orders log entries as the log holds them: by position,
// then by sequence number.
func compareEntries(a, b logEntry) int {
	return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(a.seq, b.seq))
}
