package accesstoken_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	_ "github.com/engram-go/engram/memory/postgres"
)

// Tokens on both engines: created with a secret shown once, verified by
// it, listed without it, revoked for every store on the database at once,
// expired by the store's clock.
func TestTokens(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			now, a, b := twoStores(t, engine)

			tok, secret, err := accesstoken.Of(a).Create(ctx, accesstoken.Spec{Agent: "ada", Name: "laptop", Expires: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(secret, accesstoken.Prefix) || len(secret) < len(accesstoken.Prefix)+43 {
				t.Fatalf("secret %q: want prefix %q and ≥256 bits", secret, accesstoken.Prefix)
			}
			_, secret2, err := accesstoken.Of(a).Create(ctx, accesstoken.Spec{Agent: "ada"})
			if err != nil || secret2 == secret {
				t.Fatalf("second token: %v (same secret: %v)", err, secret2 == secret)
			}
			got, err := accesstoken.Of(b).Verify(ctx, secret)
			if err != nil || got.ID != tok.ID || got.Agent != "ada" || got.Name != "laptop" || got.ReadOnly {
				t.Fatalf("Verify = %+v, %v; want token %d of ada", got, err, tok.ID)
			}
			if got.LastUsedAt.IsZero() {
				t.Fatal("Verify did not record the use")
			}

			for _, bad := range []string{"", "engram_", secret + "x", secret[:len(secret)-1], "Bearer " + secret, strings.ToUpper(secret)} {
				if _, err := accesstoken.Of(b).Verify(ctx, bad); !errors.Is(err, accesstoken.ErrInvalid) {
					t.Errorf("Verify(%q) = %v, want ErrInvalid", bad, err)
				}
			}

			list, err := accesstoken.Of(b).List(ctx)
			if err != nil || len(list) != 2 || list[0].ID != tok.ID || list[0].ExpiresAt.IsZero() || !list[1].ExpiresAt.IsZero() {
				t.Fatalf("Tokens = %+v, %v", list, err)
			}

			// Revoked on one store, refused by the other on its next call.
			if err := accesstoken.Of(a).Revoke(ctx, tok.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := accesstoken.Of(b).Verify(ctx, secret); !errors.Is(err, accesstoken.ErrRevoked) {
				t.Fatalf("revoked token verifies: %v", err)
			}
			if err := accesstoken.Of(b).Revoke(ctx, tok.ID); !errors.Is(err, accesstoken.ErrRevoked) {
				t.Fatalf("second revoke: %v", err)
			}
			if err := accesstoken.Of(b).Revoke(ctx, 9999); !errors.Is(err, memory.ErrNotFound) {
				t.Fatalf("revoke of no token: %v", err)
			}
			if got, _ := accesstoken.Of(b).Get(ctx, tok.ID); got.RevokedAt.IsZero() {
				t.Fatal("Token does not show the revocation")
			}

			// Expiry follows the store's clock.
			short, s3, err := accesstoken.Of(a).Create(ctx, accesstoken.Spec{Agent: "bob", ReadOnly: true, Expires: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := accesstoken.Of(b).Verify(ctx, s3); err != nil || !got.ReadOnly || got.Agent != "bob" {
				t.Fatalf("read-only token: %+v, %v", got, err)
			}
			now.Add(int64(time.Minute))
			if _, err := accesstoken.Of(b).Verify(ctx, s3); !errors.Is(err, accesstoken.ErrExpired) {
				t.Fatalf("expired token %d verifies: %v", short.ID, err)
			}
			if _, err := accesstoken.Of(b).Verify(ctx, secret2); err != nil {
				t.Fatalf("token without expiry: %v", err)
			}

			h, hs, err := accesstoken.Of(a).Create(ctx, accesstoken.Spec{Human: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := accesstoken.Of(b).Verify(ctx, hs); err != nil || got.Human != "alice" || got.Agent != "" || got.ID != h.ID {
				t.Fatalf("human token: %+v, %v", got, err)
			}
		})
	}
}

func TestCreateTokenRefuses(t *testing.T) {
	ctx := context.Background()
	c, err := memory.Open(ctx, filepath.Join(t.TempDir(), "tok.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, spec := range []accesstoken.Spec{
		{},
		{Agent: " "},
		{Agent: "ada", Human: "alice"},
		{Agent: "ada", Expires: -time.Second},
		{Human: "alice", ReadOnly: true},
		{Agent: "ada", Name: "a\x00b"},
		{Agent: strings.Repeat("a", 300)},
		// An expiry past what Unix nanoseconds hold (year 2262) would wrap
		// to a date in the past: a token dead on arrival.
		{Agent: "ada", Expires: 2562047 * time.Hour},
		{Agent: "ada", Expires: time.Duration(math.MaxInt64)},
		// Control characters would forge lines of token list and of logs.
		{Agent: "ada", Name: "laptop\n2   agent:root"},
		{Agent: "ada\x1b[2J"},
		{Human: "ali\x07ce"},
	} {
		if _, secret, err := accesstoken.Of(c).Create(ctx, spec); !errors.Is(err, memory.ErrInvalidArgument) || secret != "" {
			t.Errorf("Create(%+v) = %q, %v; want ErrInvalidArgument", spec, secret, err)
		}
	}
	if list, err := accesstoken.Of(c).List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("refused specs stored tokens: %+v, %v", list, err)
	}
}

// twoStores opens two stores on one new database of engine ("sqlite" or
// "postgres"), as two processes would, on a clock the test moves (now,
// in Unix nanoseconds, from 26 November 2026 09:00 UTC).
func twoStores(t *testing.T, engine string) (now *atomic.Int64, a, b *memory.Store) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "tokens.db")
	if engine == "postgres" {
		target = pgtest.Start(t).NewDatabase(t)
	}
	now = new(atomic.Int64)
	now.Store(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	open := func() *memory.Store {
		c, err := memory.Open(context.Background(), target, &memory.Options{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	return now, open(), open()
}
