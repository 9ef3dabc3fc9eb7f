package memory

import (
	"context"
	"time"
)

// startEmbedder starts the worker that computes block vectors after writes
// (a write only marks its block; see searchindex.Index.FlushBlockVectors), and
// the vectors of log entries rotated into archival (marked in the append's
// transaction; see searchindex.Index.FlushArchivalVectors), so no write waits
// for an embedder. Searches that need the vectors flush first.
func (c *Store) startEmbedder() {
	ctx, cancel := context.WithCancel(context.Background())
	c.embedWake = make(chan struct{}, 1)
	c.embedStop = cancel
	c.embedDone = make(chan struct{})
	go func() {
		defer close(c.embedDone)
		backoff := time.Second
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.embedWake:
			}
			err := c.index.FlushBlockVectors(ctx)
			if err == nil {
				err = c.index.FlushArchivalVectors(ctx)
			}
			if err != nil && ctx.Err() == nil {
				c.log.Error("embedding changed blocks or rotated log entries failed; retrying", "err", err, "in", backoff)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Minute)
				c.wakeEmbedder()
				continue
			}
			backoff = time.Second
		}
	}()
	c.wakeEmbedder() // blocks marked before this process started
}

func (c *Store) wakeEmbedder() {
	if c.embedWake == nil {
		return
	}
	select {
	case c.embedWake <- struct{}{}:
	default:
	}
}

func (c *Store) stopEmbedder() {
	if c.embedStop == nil {
		return
	}
	c.embedStop()
	<-c.embedDone
}
