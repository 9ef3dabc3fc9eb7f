package memory

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/engram-go/engram/blocks"
)

// DocumentID is the automerge-repo document id of one epoch of a block
// (engram serve's /sync): 16 random bytes, stored, so it says nothing of
// the block's owner or label. A rebase starts a new automerge document and
// so gets a new id; package syncrepo encodes it as an automerge: URL.
type DocumentID [16]byte

// documentID implements [Block.DocumentID] for agent on owner's block
// (owner "": its own).
func (c *Store) documentID(ctx context.Context, agent, owner, label string) (DocumentID, error) {
	e, _, err := c.view(ctx, agent, owner, label)
	if err != nil {
		return DocumentID{}, err
	}
	// The epoch is read from the database, not the cached entry: another
	// process's rebase reaches a cached entry only with its notification,
	// and an id for the old epoch would name a document that is gone.
	var epoch int64
	if err := c.rdb.QueryRowContext(ctx, `SELECT epoch FROM blocks WHERE id = ? AND incarnation = ?`, e.id, e.incarnation).Scan(&epoch); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return DocumentID{}, notFound("block %q of %q", label, e.owner)
		}
		return DocumentID{}, fmt.Errorf("memory: document id of block %q of %q: %w", label, e.owner, err)
	}
	const sel = `SELECT doc_id FROM sync_documents WHERE block_id = ? AND incarnation = ? AND epoch = ?`
	var hexID string
	err = c.rdb.QueryRowContext(ctx, sel, e.id, e.incarnation, epoch).Scan(&hexID)
	if errors.Is(err, sql.ErrNoRows) {
		var id DocumentID
		if _, err := rand.Read(id[:]); err != nil {
			return DocumentID{}, fmt.Errorf("memory: document id of block %q of %q: read random bytes: %w", label, e.owner, err)
		}
		// Two processes may make the block's first id at once: the
		// unique key keeps one, which both read back.
		// (No lock: the unique key decides.)
		err = c.write(ctx, nil, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO sync_documents (doc_id, block_id, incarnation, epoch) VALUES (?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, hex.EncodeToString(id[:]), e.id, e.incarnation, epoch); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, sel, e.id, e.incarnation, epoch).Scan(&hexID)
		})
	}
	if err != nil {
		return DocumentID{}, fmt.Errorf("memory: document id of block %q of %q: %w", label, e.owner, err)
	}
	return parseDocumentID(hexID)
}

func parseDocumentID(s string) (DocumentID, error) {
	var id DocumentID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("%w: stored document id %q is not 32 hex digits", blocks.ErrCorrupt, s)
	}
	copy(id[:], b)
	return id, nil
}

// documentBlock implements [Agent.DocumentBlock]: the owner and label of
// the block, or ErrNotFound for anything agent cannot read.
func (c *Store) documentBlock(ctx context.Context, agent string, id DocumentID) (owner, label string, err error) {
	if err := c.checkOpen(ctx); err != nil {
		return "", "", err
	}
	var incarnation int64
	err = c.rdb.QueryRowContext(ctx, `SELECT b.owner, b.label, d.incarnation FROM sync_documents d
		JOIN blocks b ON b.id = d.block_id AND b.incarnation = d.incarnation AND b.epoch = d.epoch
		WHERE d.doc_id = ?`, hex.EncodeToString(id[:])).Scan(&owner, &label, &incarnation)
	unavailable := notFound("document %x", id[:])
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", unavailable
	}
	if err != nil {
		return "", "", fmt.Errorf("memory: look up document %x: %w", id[:], err)
	}
	e, _, err := c.view(ctx, agent, owner, label)
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, blocks.ErrPermission):
		return "", "", unavailable
	case err != nil:
		return "", "", fmt.Errorf("memory: look up document %x: %w", id[:], err)
	}
	if e.incarnation != incarnation {
		return "", "", unavailable
	}
	return owner, label, nil
}
