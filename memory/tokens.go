package memory

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
)

// TokenPrefix starts every token secret, so a leaked one is recognisable
// (secret scanners, logs) and a pasted value of another kind is refused
// without a database lookup.
const TokenPrefix = "engram_"

// tokenBytes is the secret's randomness: 256 bits.
const tokenBytes = 32

// tokenUseResolution is how stale a token's LastUsedAt may be: recording
// every use would make every request a write.
const tokenUseResolution = time.Minute

// maxTokenTime is the latest time a token's row can hold (Unix
// nanoseconds in an int64).
var maxTokenTime = time.Unix(0, math.MaxInt64)

// AccessToken describes an access token for a network front end (engram serve).
// Exactly one of Agent and Human is set: an agent token acts as that agent
// (its sessions get the agent's tools and blocks, nothing else); a human
// token lets that person into the web UI, where approvals are recorded as
// HumanApprover+Human. The secret itself is never stored or returned
// again after Tokens.Create.
type AccessToken struct {
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

// Tokens are the store's access tokens and login links, for a network
// front end (engram serve): make, list, revoke and verify tokens, and
// make and use one-time login links for human tokens. They live in the
// store, so every process on it sees the same tokens and revocations.
type Tokens struct{ c *Store }

// Tokens returns the store's access tokens and login links.
func (c *Store) Tokens() *Tokens { return &c.tokens }

// TokenSpec is what Tokens.Create makes: set exactly one of Agent and Human.
type TokenSpec struct {
	Agent    string
	Human    string
	Name     string
	ReadOnly bool
	// Expires is the token's lifetime from now; 0 means it never expires.
	Expires time.Duration
}

// Create makes a token and returns it with its secret: TokenPrefix
// followed by 256 random bits in unpadded base64url. Only the secret's
// SHA-256 is stored, so this is the one time it can be shown.
func (tk *Tokens) Create(ctx context.Context, spec TokenSpec) (AccessToken, string, error) {
	c := tk.c
	if err := c.checkOpen(ctx); err != nil {
		return AccessToken{}, "", err
	}
	agent, human := strings.TrimSpace(spec.Agent), strings.TrimSpace(spec.Human)
	switch {
	case (agent == "") == (human == ""):
		return AccessToken{}, "", invalidArg("token: set exactly one of an agent id and a human name (agent %q, human %q)", spec.Agent, spec.Human)
	case spec.Expires < 0:
		return AccessToken{}, "", invalidArg("token: negative lifetime %v", spec.Expires)
	case human != "" && spec.ReadOnly:
		return AccessToken{}, "", invalidArg("token: a human token cannot be read-only (the web UI decides proposals)")
	}
	for _, f := range []string{agent, human, spec.Name} {
		if !utf8.ValidString(f) || strings.ContainsFunc(f, unicode.IsControl) || len(f) > 256 {
			return AccessToken{}, "", invalidArg("token: agent, human and name must be UTF-8 text without control characters, at most 256 bytes")
		}
	}
	now := c.opts.Now()
	if spec.Expires > 0 && now.Add(spec.Expires).After(maxTokenTime) {
		// Stored as Unix nanoseconds, such an expiry would wrap to a date
		// in the past.
		return AccessToken{}, "", invalidArg("token: lifetime %v ends after %s; leave it out for a token that never expires", spec.Expires, maxTokenTime.UTC().Format(time.RFC3339))
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return AccessToken{}, "", fmt.Errorf("memory: create token: read random bytes: %w", err)
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	t := AccessToken{Agent: agent, Human: human, Name: spec.Name, ReadOnly: spec.ReadOnly, CreatedAt: time.Unix(0, now.UnixNano())}
	var expires int64
	if spec.Expires > 0 {
		t.ExpiresAt = time.Unix(0, now.Add(spec.Expires).UnixNano())
		expires = t.ExpiresAt.UnixNano()
	}
	id, err := c.insertID(ctx, nil, `INSERT INTO tokens (hash, agent, human, name, read_only, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, tokenHash(secret), agent, human, spec.Name, tokenFlag(spec.ReadOnly), now.UnixNano(), expires)
	if err != nil {
		return AccessToken{}, "", fmt.Errorf("memory: create token for %s: %w", t.subject(), err)
	}
	t.ID = id
	return t, secret, nil
}

// List lists every token (revoked and expired ones too), oldest first.
func (tk *Tokens) List(ctx context.Context) ([]AccessToken, error) {
	c := tk.c
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	rows, err := c.rdb.QueryContext(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("memory: list tokens: %w", err)
	}
	defer rows.Close()
	var out []AccessToken
	for rows.Next() {
		t, _, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("memory: list tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: list tokens: %w", err)
	}
	return out, nil
}

// Get returns token id (ErrNotFound if there is none).
func (tk *Tokens) Get(ctx context.Context, id int64) (AccessToken, error) {
	c := tk.c
	if err := c.checkOpen(ctx); err != nil {
		return AccessToken{}, err
	}
	t, _, err := scanToken(c.rdb.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return AccessToken{}, notFound("token %d", id)
	}
	if err != nil {
		return AccessToken{}, fmt.Errorf("memory: read token %d: %w", id, err)
	}
	return t, nil
}

// Revoke revokes token id for good. Every Verify from then on
// fails, in every process on the store: verification reads the token's
// row each time. It returns ErrNotFound for no such token and
// ErrTokenRevoked for one revoked already.
func (tk *Tokens) Revoke(ctx context.Context, id int64) error {
	c := tk.c
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	n, err := c.exec(ctx, nil, `UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at = 0`, c.nanos(), id)
	if err != nil {
		return fmt.Errorf("memory: revoke token %d: %w", id, err)
	}
	if n == 0 {
		if _, err := c.Tokens().Get(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("%w: token %d", ErrTokenRevoked, id)
	}
	return nil
}

// Verify returns the token whose secret this is, when it is valid
// now: ErrTokenInvalid for an unknown or malformed secret, ErrTokenExpired
// and ErrTokenRevoked for those. It reads the token's row every time (one
// indexed lookup by the secret's hash), so a revocation made by any
// process is honoured on the next call; it records the use (LastUsedAt)
// at most once a minute. Error messages never contain the secret.
func (tk *Tokens) Verify(ctx context.Context, secret string) (AccessToken, error) {
	c := tk.c
	if err := c.checkOpen(ctx); err != nil {
		return AccessToken{}, err
	}
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 256 {
		return AccessToken{}, ErrTokenInvalid
	}
	want := tokenHash(secret)
	t, hash, err := scanToken(c.rdb.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`, want))
	if errors.Is(err, sql.ErrNoRows) {
		return AccessToken{}, ErrTokenInvalid
	}
	if err != nil {
		return AccessToken{}, fmt.Errorf("memory: verify token: %w", err)
	}
	// The lookup matched the hash already; comparing again in constant
	// time keeps the decision itself free of a timing signal whatever the
	// database's index comparison does.
	if subtle.ConstantTimeCompare([]byte(hash), []byte(want)) != 1 {
		return AccessToken{}, ErrTokenInvalid
	}
	now := c.opts.Now()
	switch {
	case !t.RevokedAt.IsZero():
		return AccessToken{}, fmt.Errorf("%w: token %d", ErrTokenRevoked, t.ID)
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return AccessToken{}, fmt.Errorf("%w: token %d (at %s)", ErrTokenExpired, t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if now.Sub(t.LastUsedAt) >= tokenUseResolution {
		// Best effort: a failed record must not refuse a valid token.
		if _, err := c.exec(ctx, nil, `UPDATE tokens SET last_used_at = ? WHERE id = ? AND last_used_at < ?`,
			now.UnixNano(), t.ID, now.Add(-tokenUseResolution).UnixNano()); err == nil {
			t.LastUsedAt = time.Unix(0, now.UnixNano())
		}
	}
	return t, nil
}

const tokenColumns = `id, hash, agent, human, name, read_only, created_at, expires_at, last_used_at, revoked_at`

func scanToken(row interface{ Scan(...any) error }) (AccessToken, string, error) {
	var t AccessToken
	var hash string
	var ro int
	var created, expires, used, revoked int64
	if err := row.Scan(&t.ID, &hash, &t.Agent, &t.Human, &t.Name, &ro, &created, &expires, &used, &revoked); err != nil {
		return AccessToken{}, "", err
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
func (t AccessToken) subject() string {
	if t.Human != "" {
		return "human " + t.Human
	}
	return "agent " + t.Agent
}

// LoginLinkPrefix starts every login link's secret, so one is told apart
// from a token (and refused without a lookup where a token is expected).
const LoginLinkPrefix = "engramlink_"

// MaxLoginLinkTTL is the longest a login link may stay usable: it travels
// in a URL (a chat message, a terminal's scrollback), so it is meant to
// be used within minutes.
const MaxLoginLinkTTL = 24 * time.Hour

// CreateLoginLink makes a one-time login link for human token tokenID,
// usable once within ttl (at most MaxLoginLinkTTL, and not past the
// token's own expiry), and returns its secret: LoginLinkPrefix followed
// by 256 random bits in unpadded base64url. Only the secret's SHA-256 is
// stored. It returns ErrNotFound for no such token, ErrTokenRevoked and
// ErrTokenExpired for such a token, and ErrInvalidArgument for an agent's
// token or a ttl out of range.
func (tk *Tokens) CreateLoginLink(ctx context.Context, tokenID int64, ttl time.Duration) (string, error) {
	c := tk.c
	if err := c.checkOpen(ctx); err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > MaxLoginLinkTTL {
		return "", invalidArg("login link: lifetime %v is not between 0 and %v", ttl, MaxLoginLinkTTL)
	}
	t, err := c.Tokens().Get(ctx, tokenID)
	if err != nil {
		return "", err
	}
	now := c.opts.Now()
	switch {
	case t.Human == "":
		return "", invalidArg("login link: token %d is agent %s's; the web UI takes a human token (engram token create --human NAME)", t.ID, t.Agent)
	case !t.RevokedAt.IsZero():
		return "", fmt.Errorf("%w: token %d", ErrTokenRevoked, t.ID)
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return "", fmt.Errorf("%w: token %d (at %s)", ErrTokenExpired, t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	expires := now.Add(ttl)
	if !t.ExpiresAt.IsZero() && t.ExpiresAt.Before(expires) {
		expires = t.ExpiresAt
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("memory: create login link for token %d: read random bytes: %w", t.ID, err)
	}
	secret := LoginLinkPrefix + base64.RawURLEncoding.EncodeToString(raw)
	if _, err := c.exec(ctx, nil, `INSERT INTO login_links (hash, token_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		tokenHash(secret), t.ID, now.UnixNano(), expires.UnixNano()); err != nil {
		return "", fmt.Errorf("memory: create login link for token %d: %w", t.ID, err)
	}
	return secret, nil
}

// UseLoginLink consumes login link secret and returns its human token.
// The link is marked used by one conditional UPDATE, so of any number of
// concurrent uses, in any processes on the store, exactly one gets the
// token; the others, and any use of an unknown or expired link, get
// ErrLoginLinkInvalid. A link whose token was revoked or expired since it
// was made is consumed and fails with ErrTokenRevoked or ErrTokenExpired.
// Error messages never contain the secret.
func (tk *Tokens) UseLoginLink(ctx context.Context, secret string) (AccessToken, error) {
	c := tk.c
	if err := c.checkOpen(ctx); err != nil {
		return AccessToken{}, err
	}
	if !strings.HasPrefix(secret, LoginLinkPrefix) || len(secret) > 256 {
		return AccessToken{}, ErrLoginLinkInvalid
	}
	now := c.opts.Now()
	var t AccessToken
	found := false
	// (No lock: one guarded UPDATE claims the link.)
	err := c.write(ctx, nil, func(ctx context.Context, tx *sql.Tx) error {
		found = false
		var id int64
		err := tx.QueryRowContext(ctx, `UPDATE login_links SET used_at = ? WHERE hash = ? AND used_at = 0 AND expires_at > ? RETURNING token_id`,
			now.UnixNano(), tokenHash(secret), now.UnixNano()).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if t, _, err = scanToken(tx.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?`, id)); err != nil {
			return err
		}
		found = true
		if now.Sub(t.LastUsedAt) >= tokenUseResolution {
			if _, err := tx.ExecContext(ctx, `UPDATE tokens SET last_used_at = ? WHERE id = ?`, now.UnixNano(), id); err != nil {
				return err
			}
			t.LastUsedAt = time.Unix(0, now.UnixNano())
		}
		return nil
	})
	switch {
	case err != nil:
		return AccessToken{}, fmt.Errorf("memory: use login link: %w", err)
	case !found:
		return AccessToken{}, ErrLoginLinkInvalid
	case !t.RevokedAt.IsZero():
		return AccessToken{}, fmt.Errorf("%w: token %d (of a login link)", ErrTokenRevoked, t.ID)
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return AccessToken{}, fmt.Errorf("%w: token %d (of a login link, at %s)", ErrTokenExpired, t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	case t.Human == "":
		// CreateLoginLink makes links for human tokens only.
		return AccessToken{}, ErrLoginLinkInvalid
	}
	return t, nil
}
