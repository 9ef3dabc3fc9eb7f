package accesstoken

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

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
// stored. It returns memory.ErrNotFound for no such token, ErrRevoked and
// ErrExpired for such a token, and memory.ErrInvalidArgument for an agent's
// token or a ttl out of range.
func (tk *Tokens) CreateLoginLink(ctx context.Context, tokenID int64, ttl time.Duration) (string, error) {
	if err := tk.t.Check(ctx); err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > MaxLoginLinkTTL {
		return "", invalidArg("login link: lifetime %v is not between 0 and %v", ttl, MaxLoginLinkTTL)
	}
	t, err := tk.Get(ctx, tokenID)
	if err != nil {
		return "", err
	}
	now := tk.t.Now()
	switch {
	case t.Human == "":
		return "", fmt.Errorf("%w: token %d is agent %s's; the web UI takes a human token (engram token create --human NAME)", ErrNotHuman, t.ID, t.Agent)
	case !t.RevokedAt.IsZero():
		return "", fmt.Errorf("%w: token %d", ErrRevoked, t.ID)
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return "", fmt.Errorf("%w: token %d (at %s)", ErrExpired, t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	expires := now.Add(ttl)
	if !t.ExpiresAt.IsZero() && t.ExpiresAt.Before(expires) {
		expires = t.ExpiresAt
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("accesstoken: create login link for token %d: read random bytes: %w", t.ID, err)
	}
	secret := LoginLinkPrefix + base64.RawURLEncoding.EncodeToString(raw)
	if _, err := tk.exec(ctx, `INSERT INTO login_links (hash, token_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		tokenHash(secret), t.ID, now.UnixNano(), expires.UnixNano()); err != nil {
		return "", fmt.Errorf("accesstoken: create login link for token %d: %w", t.ID, err)
	}
	return secret, nil
}

// UseLoginLink consumes login link secret and returns its human token.
// The link is marked used by one conditional UPDATE, so of any number of
// concurrent uses, in any processes on the store, exactly one gets the
// token; the others, and any use of an unknown or expired link, get
// ErrLoginLinkInvalid. A link whose token was revoked or expired since it
// was made is consumed and fails with ErrRevoked or ErrExpired.
// Error messages never contain the secret.
func (tk *Tokens) UseLoginLink(ctx context.Context, secret string) (Token, error) {
	if err := tk.t.Check(ctx); err != nil {
		return Token{}, err
	}
	if !strings.HasPrefix(secret, LoginLinkPrefix) || len(secret) > 256 {
		return Token{}, ErrLoginLinkInvalid
	}
	now := tk.t.Now()
	var t Token
	found := false
	// (No lock: one guarded UPDATE claims the link.)
	err := tk.t.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
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
		return Token{}, fmt.Errorf("accesstoken: use login link: %w", err)
	case !found:
		return Token{}, ErrLoginLinkInvalid
	case !t.RevokedAt.IsZero():
		return Token{}, fmt.Errorf("%w: token %d (of a login link)", ErrRevoked, t.ID)
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return Token{}, fmt.Errorf("%w: token %d (of a login link, at %s)", ErrExpired, t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	case t.Human == "":
		// CreateLoginLink makes links for human tokens only.
		return Token{}, ErrLoginLinkInvalid
	}
	return t, nil
}
