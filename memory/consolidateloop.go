package memory

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RunConsolidation consolidates archival memory in the background: every
// interval it runs one Consolidate round for each agent with live
// archival entries (opts as for Consolidate, with Resume),
// until ctx is done or the store is closed, and then returns nil. Start it
// in a goroutine of your own; it is off unless started.
//
// Each agent's rounds resume where the last one stopped (Resume: past the
// highest id a round examined, recorded in the store, so a new loop or a
// restarted process resumes too): a round examines at most MaxEntries
// entries, the entries no round examined first, so an entry is examined
// once and a cluster is proposed once unless it gains members.
// A round's failure is logged (Options.Logger) and the agent is tried
// again at the next interval. every must be positive.
func (c *Store) RunConsolidation(ctx context.Context, every time.Duration, opts *ConsolidateOptions) error {
	if every <= 0 {
		return invalidArg("consolidation interval %v (want a positive duration)", every)
	}
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	closing := c.closedSignal()
	o := ConsolidateOptions{}
	if opts != nil {
		o = *opts
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-closing:
			return nil
		case <-t.C:
		}
		agents, err := c.archivalAgents(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return nil
			}
			c.log.Error("consolidation: list agents", "err", err)
			continue
		}
		for _, a := range agents {
			if ctx.Err() != nil {
				return nil
			}
			ro := o
			ro.Resume = true
			rep, err := c.Agent(a).Archival().Consolidate(ctx, &ro)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrClosed) {
					return nil
				}
				c.log.Error("consolidation round", "agent", a, "err", err)
				continue
			}
			if rep.Examined > 0 {
				c.log.Info("consolidation round", "agent", a, "examined", rep.Examined, "clusters", len(rep.Clusters),
					"proposed", len(rep.Proposals), "applied", rep.Applied, "skipped", len(rep.Skipped),
					"model_errors", len(rep.ModelErrors), "last", rep.Last, "elapsed", rep.Elapsed)
			}
		}
	}
}

// closedSignal is closed when the store is closed.
func (c *Store) closedSignal() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing == nil {
		c.closing = make(chan struct{})
		if c.closed {
			close(c.closing)
		}
	}
	return c.closing
}

// archivalAgents lists the agents with live archival entries.
func (c *Store) archivalAgents(ctx context.Context) ([]string, error) {
	rows, err := c.rdb.QueryContext(ctx, `SELECT DISTINCT agent FROM archival WHERE valid_to IS NULL ORDER BY agent`)
	if err != nil {
		return nil, fmt.Errorf("memory: list agents with archival entries: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, fmt.Errorf("memory: list agents with archival entries: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
