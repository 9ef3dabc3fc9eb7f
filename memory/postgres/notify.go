package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// notifier sends the notifications of WriteBlocks' block changes after
// their commits: one statement for what is pending notifyLinger after the
// first (one pg_notify per block), in a transaction with synchronous_commit off (a
// lost notification is no worse than a late one, and the transaction
// then waits for no WAL flush while it holds PostgreSQL's notification
// lock). Writers only queue their blocks' ids.
type notifier struct {
	db     *sql.DB
	log    *slog.Logger
	target string
	mu     sync.Mutex
	ids    []int64
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// notifyBatch bounds the notifications one statement sends.
const notifyBatch = 1000

func startNotifier(db *sql.DB, log *slog.Logger, target string) *notifier {
	n := &notifier{db: db, log: log, target: target, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go n.run()
	return n
}

// add queues ids' notifications.
func (n *notifier) add(ids []int64) {
	if len(ids) == 0 {
		return
	}
	n.mu.Lock()
	n.ids = append(n.ids, ids...)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *notifier) run() {
	defer close(n.done)
	for {
		select {
		case <-n.wake:
			// The blocks written meanwhile go in the same statement: under
			// load one statement a few writes, not one a write.
			select {
			case <-time.After(notifyLinger):
			case <-n.stop:
			}
			n.flush()
		case <-n.stop:
			n.flush()
			return
		}
	}
}

// notifyLinger is how long the notifier collects blocks after the first
// before it sends: what it adds to a notification's delivery.
const notifyLinger = 2 * time.Millisecond

// flush sends every queued notification (each block once).
func (n *notifier) flush() {
	n.mu.Lock()
	ids := n.ids
	n.ids = nil
	n.mu.Unlock()
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), notifyBatch)]
		ids = ids[len(chunk):]
		list, _ := json.Marshal(chunk)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := n.db.ExecContext(ctx, `SELECT set_config('synchronous_commit', 'off', true), pg_notify('`+notifyChannel+`', value)
			FROM json_array_elements_text(?::json)`, string(list))
		cancel()
		if err != nil {
			n.log.Warn("engram: block change notifications not sent; other processes' cached copies may lag", "target", n.target, "blocks", len(chunk), "err", err)
		}
	}
}

// close sends what is queued and stops.
func (n *notifier) close() {
	n.once.Do(func() { close(n.stop) })
	<-n.done
}
