package accesstoken

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

// Prefix starts every token secret, so a leaked one is recognisable
// (secret scanners, logs) and a pasted value of another kind is refused
// without a database lookup.
const Prefix = "engram_"

// tokenBytes is the secret's randomness: 256 bits.
const tokenBytes = 32

// tokenUseResolution is how stale a token's LastUsedAt may be: recording
// every use would make every request a write.
const tokenUseResolution = time.Minute

// maxTokenTime is the latest time a token's row can hold (Unix
// nanoseconds in an int64).
var maxTokenTime = time.Unix(0, math.MaxInt64)

// Token describes an access token for a network front end (engram serve).
// Exactly one of Agent and Human is set: an agent token acts as that agent
// (its sessions get the agent's tools and blocks, nothing else); a human
// token lets that person into the web UI, where approvals are recorded as
// HumanApprover+Human. The secret itself is never stored or returned
// again after Tokens.Create.
type Token struct {
	ID    int64
	Agent string
	Human string
	// Name is a label for people (which host or program holds it); it
	// appears in access logs instead of the secret.
	Name string
	// ReadOnly tokens may read and search but not write.
	ReadOnly  bool
	CreatedAt time.Time
	// ExpiresAt, LastUsedAt and RevokedAt are zero for never.
	ExpiresAt  time.Time
	LastUsedAt time.Time
	RevokedAt  time.Time
}

// Tokens are a store's access tokens and login links, for engram serve:
// make, list, revoke and verify tokens, and make and use one-time login
// links for human tokens. They live in the store's database, so every
// process on it sees the same tokens and revocations. A Tokens is safe
// for concurrent use; it fails with memory.ErrClosed once its store is
// closed.
type Tokens struct{ t storeaccess.Tables }

// Of returns the access tokens and login links kept in s's database.
func Of(s *memory.Store) *Tokens { return &Tokens{t: storeaccess.TablesOf(s)} }

// exec runs one statement in a write transaction of the store and returns
// the rows affected.
func (tk *Tokens) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := tk.t.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// insertID runs one INSERT ... RETURNING id in a write transaction of the
// store.
func (tk *Tokens) insertID(ctx context.Context, query string, args ...any) (int64, error) {
	var id int64
	err := tk.t.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, query, args...).Scan(&id)
	})
	return id, err
}

func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: %s", memory.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func notFound(format string, args ...any) error {
	return fmt.Errorf("%w: %s", memory.ErrNotFound, fmt.Sprintf(format, args...))
}

// Spec is what Tokens.Create makes: set exactly one of Agent and Human.
type Spec struct {
	Agent    string
	Human    string
	Name     string
	ReadOnly bool
	// Expires is the token's lifetime from now; 0 means it never expires.
	Expires time.Duration
}

// Create makes a token and returns it with its secret: Prefix
// followed by 256 random bits in unpadded base64url. Only the secret's
// SHA-256 is stored, so this is the one time it can be shown.
func (tk *Tokens) Create(ctx context.Context, spec Spec) (Token, string, error) {
	if err := tk.t.Check(ctx); err != nil {
		return Token{}, "", err
	}
	agent, human := strings.TrimSpace(spec.Agent), strings.TrimSpace(spec.Human)
	switch {
	case (agent == "") == (human == ""):
		return Token{}, "", invalidArg("token: set exactly one of an agent id and a human name (agent %q, human %q)", spec.Agent, spec.Human)
	case spec.Expires < 0:
		return Token{}, "", invalidArg("token: negative lifetime %v", spec.Expires)
	case human != "" && spec.ReadOnly:
		return Token{}, "", invalidArg("token: a human token cannot be read-only (the web UI decides proposals)")
	}
	for _, f := range []string{agent, human, spec.Name} {
		if !utf8.ValidString(f) || strings.ContainsFunc(f, unicode.IsControl) || len(f) > 256 {
			return Token{}, "", invalidArg("token: agent, human and name must be UTF-8 text without control characters, at most 256 bytes")
		}
	}
	now := tk.t.Now()
	if spec.Expires > 0 && now.Add(spec.Expires).After(maxTokenTime) {
		// Stored as Unix nanoseconds, such an expiry would wrap to a date
		// in the past.
		return Token{}, "", invalidArg("token: lifetime %v ends after %s; leave it out for a token that never expires", spec.Expires, maxTokenTime.UTC().Format(time.RFC3339))
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return Token{}, "", fmt.Errorf("accesstoken: create token: read random bytes: %w", err)
	}
	secret := Prefix + base64.RawURLEncoding.EncodeToString(raw)
	t := Token{Agent: agent, Human: human, Name: spec.Name, ReadOnly: spec.ReadOnly, CreatedAt: time.Unix(0, now.UnixNano())}
	var expires int64
	if spec.Expires > 0 {
		t.ExpiresAt = time.Unix(0, now.Add(spec.Expires).UnixNano())
		expires = t.ExpiresAt.UnixNano()
	}
	id, err := tk.insertID(ctx, `INSERT INTO tokens (hash, agent, human, name, read_only, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, tokenHash(secret), agent, human, spec.Name, tokenFlag(spec.ReadOnly), now.UnixNano(), expires)
	if err != nil {
		return Token{}, "", fmt.Errorf("accesstoken: create token for %s: %w", t.subject(), err)
	}
	t.ID = id
	return t, secret, nil
}

// List lists every token (revoked and expired ones too), oldest first.
func (tk *Tokens) List(ctx context.Context) ([]Token, error) {
	if err := tk.t.Check(ctx); err != nil {
		return nil, err
	}
	rows, err := tk.t.DB.QueryContext(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("accesstoken: list tokens: %w", err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		t, _, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("accesstoken: list tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("accesstoken: list tokens: %w", err)
	}
	return out, nil
}

// Get returns token id (memory.ErrNotFound if there is none).
func (tk *Tokens) Get(ctx context.Context, id int64) (Token, error) {
	if err := tk.t.Check(ctx); err != nil {
		return Token{}, err
	}
	t, _, err := scanToken(tk.t.DB.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, notFound("token %d", id)
	}
	if err != nil {
		return Token{}, fmt.Errorf("accesstoken: read token %d: %w", id, err)
	}
	return t, nil
}

// Revoke revokes token id for good. Every Verify from then on
// fails, in every process on the store: verification reads the token's
// row each time. It returns memory.ErrNotFound for no such token and
// ErrRevoked for one revoked already.
func (tk *Tokens) Revoke(ctx context.Context, id int64) error {
	if err := tk.t.Check(ctx); err != nil {
		return err
	}
	n, err := tk.exec(ctx, `UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at = 0`, tk.t.Now().UnixNano(), id)
	if err != nil {
		return fmt.Errorf("accesstoken: revoke token %d: %w", id, err)
	}
	if n == 0 {
		if _, err := tk.Get(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("%w: token %d", ErrRevoked, id)
	}
	return nil
}

// Verify returns the token whose secret this is, when it is valid
// now: ErrInvalid for an unknown or malformed secret, ErrExpired
// and ErrRevoked for those. It reads the token's row every time (one
// indexed lookup by the secret's hash), so a revocation made by any
// process is honoured on the next call; it records the use (LastUsedAt)
// at most once a minute. Error messages never contain the secret.
func (tk *Tokens) Verify(ctx context.Context, secret string) (Token, error) {
	if err := tk.t.Check(ctx); err != nil {
		return Token{}, err
	}
	if !strings.HasPrefix(secret, Prefix) || len(secret) > 256 {
		return Token{}, ErrInvalid
	}
	want := tokenHash(secret)
	t, hash, err := scanToken(tk.t.DB.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`, want))
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, ErrInvalid
	}
	if err != nil {
		return Token{}, fmt.Errorf("accesstoken: verify token: %w", err)
	}
	// The lookup matched the hash already; comparing again in constant
	// time keeps the decision itself free of a timing signal whatever the
	// database's index comparison does.
	if subtle.ConstantTimeCompare([]byte(hash), []byte(want)) != 1 {
		return Token{}, ErrInvalid
	}
	now := tk.t.Now()
	switch {
	case !t.RevokedAt.IsZero():
		return Token{}, fmt.Errorf("%w: token %d", ErrRevoked, t.ID)
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return Token{}, fmt.Errorf("%w: token %d (at %s)", ErrExpired, t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if now.Sub(t.LastUsedAt) >= tokenUseResolution {
		// Best effort: a failed record must not refuse a valid token.
		if _, err := tk.exec(ctx, `UPDATE tokens SET last_used_at = ? WHERE id = ? AND last_used_at < ?`,
			now.UnixNano(), t.ID, now.Add(-tokenUseResolution).UnixNano()); err == nil {
			t.LastUsedAt = time.Unix(0, now.UnixNano())
		}
	}
	return t, nil
}

const tokenColumns = `id, hash, agent, human, name, read_only, created_at, expires_at, last_used_at, revoked_at`

func scanToken(row interface{ Scan(...any) error }) (Token, string, error) {
	var t Token
	var hash string
	var ro int
	var created, expires, used, revoked int64
	if err := row.Scan(&t.ID, &hash, &t.Agent, &t.Human, &t.Name, &ro, &created, &expires, &used, &revoked); err != nil {
		return Token{}, "", err
	}
	t.ReadOnly, t.CreatedAt = ro != 0, time.Unix(0, created)
	t.ExpiresAt, t.LastUsedAt, t.RevokedAt = nanosOrZero(expires), nanosOrZero(used), nanosOrZero(revoked)
	return t, hash, nil
}

func nanosOrZero(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func tokenFlag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tokenHash is what the store keeps of a secret.
func tokenHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// subject names the token's holder in messages.
func (t Token) subject() string {
	if t.Human != "" {
		return "human " + t.Human
	}
	return "agent " + t.Agent
}
