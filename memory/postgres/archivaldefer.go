package postgres

import (
	"context"
	"database/sql"
	"fmt"
)

// PrepareArchivalIndex implements driver.ArchivalIndexDeferrer: pgx keeps
// the statements parsed by itself.
func (b *Backend) PrepareArchivalIndex(context.Context) error { return nil }

// DeferArchivalIndex implements driver.ArchivalIndexDeferrer: the
// transaction's setting engram.archival_deferred (migration 0036) turns
// the archival insert triggers' indexing off until tx ends or flushes.
func (b *Backend) DeferArchivalIndex(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `SELECT set_config('engram.archival_deferred', 'on', true)`); err != nil {
		return fmt.Errorf("postgres: defer the archival index: %w", err)
	}
	return nil
}

// FlushArchivalIndex implements driver.ArchivalIndexDeferrer
// (engram_archival_flush).
func (b *Backend) FlushArchivalIndex(ctx context.Context, tx *sql.Tx, ids []int64) error {
	if _, err := tx.ExecContext(ctx, `SELECT engram_archival_flush($1::bigint[])`, ids); err != nil {
		return fmt.Errorf("postgres: index the deferred archival entries: %w", err)
	}
	return nil
}
