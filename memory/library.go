package memory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/internal/unixnanos"
)

// LibraryEntry is one artifact of an agent's context library: a file,
// snippet or page the agent was given in an earlier turn, which the
// builder keeps in the system prompt (deduplicated by ID) so later turns
// can refer to it instead of sending it again.
type LibraryEntry struct {
	// ID names the artifact (a path, a URL, a snippet id); unique per agent.
	ID string
	// Kind is e.g. "file", "snippet", "url" (free text).
	Kind  string
	Title string
	// Content is the artifact's latest content (last write wins).
	Content string
	// Hash is ArtifactHash(Content), set by the store.
	Hash string
	// Recoverable artifacts can be fetched again (a file on disk, a URL),
	// so the library may show only a preview of them; the content of
	// non-recoverable ones (a pasted snippet) is never compacted.
	Recoverable bool
	// Pos is the first-seen order within the agent's library; a later
	// write of the same ID keeps it.
	Pos       int64
	UpdatedAt time.Time
}

// ArtifactHash is the content hash the library and the builder compare:
// the first 16 bytes of the SHA-256 of the content, in hex.
func ArtifactHash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:16])
}

// maxArtifactID bounds an artifact id (it is rendered in tags).
const maxArtifactID = 512

// contextLibrary implements [Agent.ContextLibrary].
func (c *Store) contextLibrary(ctx context.Context, agent string) ([]LibraryEntry, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	if err := checkAgent(agent); err != nil {
		return nil, err
	}
	rows, err := c.rdb.QueryContext(ctx, `SELECT id, artifact, kind, title, content, hash, recoverable, updated_at
		FROM context_library WHERE agent = ? ORDER BY id`, agent)
	if err != nil {
		return nil, fmt.Errorf("memory: read context library of %q: %w", agent, err)
	}
	defer rows.Close()
	var out []LibraryEntry
	for rows.Next() {
		var e LibraryEntry
		var rec int
		var at int64
		if err := rows.Scan(&e.Pos, &e.ID, &e.Kind, &e.Title, &e.Content, &e.Hash, &rec, unixnanos.Scanner{N: &at}); err != nil {
			return nil, fmt.Errorf("memory: read context library of %q: %w", agent, err)
		}
		e.Recoverable, e.UpdatedAt = rec != 0, time.Unix(0, at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: read context library of %q: %w", agent, err)
	}
	return out, nil
}

// putContextLibrary implements [Agent.PutContextLibrary].
func (c *Store) putContextLibrary(ctx context.Context, agent string, entries []LibraryEntry) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	if err := checkAgent(agent); err != nil {
		return err
	}
	for i, e := range entries {
		switch {
		case strings.TrimSpace(e.ID) == "":
			return invalidArg("context library of %q: entry %d has no id", agent, i)
		case len(e.ID) > maxArtifactID:
			return invalidArg("context library of %q: entry %d: id longer than %d bytes", agent, i, maxArtifactID)
		}
		for _, f := range []string{e.ID, e.Kind, e.Title, e.Content} {
			// PostgreSQL text takes neither; SQLite would, so refuse both
			// the same way.
			if !utf8.ValidString(f) || strings.ContainsRune(f, 0) {
				return invalidArg("context library of %q: artifact %q is not valid UTF-8 text without NUL bytes", agent, e.ID)
			}
		}
	}
	if len(entries) == 0 {
		return nil
	}
	now := c.nanos()
	err := c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		for _, e := range entries {
			rec := 0
			if e.Recoverable {
				rec = 1
			}
			if _, err := tx.Exec(`INSERT INTO context_library (agent, artifact, kind, title, content, hash, recoverable, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (agent, artifact) DO UPDATE SET kind = excluded.kind, title = excluded.title,
					content = excluded.content, hash = excluded.hash, recoverable = excluded.recoverable,
					updated_at = excluded.updated_at`,
				agent, e.ID, e.Kind, e.Title, e.Content, ArtifactHash(e.Content), rec, now); err != nil {
				return fmt.Errorf("artifact %q: %w", e.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: put %d artifacts in the context library of %q: %w", len(entries), agent, err)
	}
	return nil
}

// removeFromContextLibrary implements [Agent.RemoveFromContextLibrary].
func (c *Store) removeFromContextLibrary(ctx context.Context, agent string, ids ...string) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	if err := checkAgent(agent); err != nil {
		return err
	}
	err := c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		if len(ids) == 0 {
			_, err := tx.Exec(`DELETE FROM context_library WHERE agent = ?`, agent)
			return err
		}
		for _, id := range ids {
			if _, err := tx.Exec(`DELETE FROM context_library WHERE agent = ? AND artifact = ?`, agent, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: remove from the context library of %q: %w", agent, err)
	}
	return nil
}
