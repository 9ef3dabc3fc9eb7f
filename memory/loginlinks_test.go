package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// Login links on both engines: made for a live human token only, used
// once (by exactly one of many concurrent uses across two stores on the
// database), refused when used, expired, unknown, or when their token was
// revoked since.
func TestLoginLinks(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			target := filepath.Join(t.TempDir(), "links.db")
			if engine == "postgres" {
				target = pgtest.Start(t).NewDatabase(t)
			}
			var now atomic.Int64
			now.Store(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC).UnixNano())
			clock := func() time.Time { return time.Unix(0, now.Load()) }
			open := func() *memory.Store {
				c, err := memory.Open(ctx, fresh(target), &memory.Options{Now: clock})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			a, b := open(), open() // two processes' stores on one database

			alice, _, err := a.Tokens().Create(ctx, memory.TokenSpec{Human: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			agent, _, err := a.Tokens().Create(ctx, memory.TokenSpec{Agent: "ada"})
			if err != nil {
				t.Fatal(err)
			}

			// Refused: an agent's token, no token, bad lifetimes.
			if _, err := a.Tokens().CreateLoginLink(ctx, agent.ID, time.Minute); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Errorf("link for an agent token: %v, want ErrInvalidArgument", err)
			}
			if _, err := a.Tokens().CreateLoginLink(ctx, 999, time.Minute); !errors.Is(err, memory.ErrNotFound) {
				t.Errorf("link for no token: %v, want ErrNotFound", err)
			}
			for _, ttl := range []time.Duration{0, -time.Minute, memory.MaxLoginLinkTTL + time.Second} {
				if _, err := a.Tokens().CreateLoginLink(ctx, alice.ID, ttl); !errors.Is(err, memory.ErrInvalidArgument) {
					t.Errorf("link lifetime %v: %v, want ErrInvalidArgument", ttl, err)
				}
			}

			// One use signs in; the second (on the other store) is refused.
			secret, err := a.Tokens().CreateLoginLink(ctx, alice.ID, 15*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(secret, memory.LoginLinkPrefix) || len(secret) < len(memory.LoginLinkPrefix)+43 {
				t.Fatalf("secret %q: want prefix %q and ≥256 bits", secret, memory.LoginLinkPrefix)
			}
			got, err := b.Tokens().UseLoginLink(ctx, secret)
			if err != nil || got.ID != alice.ID || got.Human != "alice" {
				t.Fatalf("UseLoginLink = %+v, %v; want token %d of alice", got, err, alice.ID)
			}
			if _, err := a.Tokens().UseLoginLink(ctx, secret); !errors.Is(err, memory.ErrLoginLinkInvalid) {
				t.Fatalf("second use: %v, want ErrLoginLinkInvalid", err)
			}

			// Unknown or malformed secrets; a token is not a link.
			_, tokSecret, _ := a.Tokens().Create(ctx, memory.TokenSpec{Human: "bob"})
			for _, bad := range []string{"", memory.LoginLinkPrefix, secret + "x", secret[:len(secret)-1], tokSecret, strings.Repeat("x", 300)} {
				if _, err := a.Tokens().UseLoginLink(ctx, bad); !errors.Is(err, memory.ErrLoginLinkInvalid) {
					t.Errorf("UseLoginLink(%.20q…): %v, want ErrLoginLinkInvalid", bad, err)
				} else if bad != "" && strings.Contains(err.Error(), bad) {
					t.Errorf("the error shows the secret: %v", err)
				}
			}

			// Expired: by the store's clock, exactly at the lifetime's end.
			expiring, err := a.Tokens().CreateLoginLink(ctx, alice.ID, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			now.Add(int64(time.Minute))
			if _, err := b.Tokens().UseLoginLink(ctx, expiring); !errors.Is(err, memory.ErrLoginLinkInvalid) {
				t.Fatalf("expired link: %v, want ErrLoginLinkInvalid", err)
			}

			// A link outlives no token: not made past the token's expiry,
			// refused once its token is revoked.
			short, _, err := a.Tokens().Create(ctx, memory.TokenSpec{Human: "carol", Expires: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			capped, err := a.Tokens().CreateLoginLink(ctx, short.ID, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			now.Add(int64(time.Minute))
			if _, err := a.Tokens().UseLoginLink(ctx, capped); !errors.Is(err, memory.ErrLoginLinkInvalid) {
				t.Errorf("link past its token's expiry: %v, want ErrLoginLinkInvalid", err)
			}
			if _, err := a.Tokens().CreateLoginLink(ctx, short.ID, time.Minute); !errors.Is(err, memory.ErrTokenExpired) {
				t.Errorf("link for an expired token: %v, want ErrTokenExpired", err)
			}
			revoked, err := a.Tokens().CreateLoginLink(ctx, alice.ID, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Tokens().Revoke(ctx, alice.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Tokens().UseLoginLink(ctx, revoked); !errors.Is(err, memory.ErrTokenRevoked) {
				t.Errorf("link of a revoked token: %v, want ErrTokenRevoked", err)
			}
			if _, err := a.Tokens().CreateLoginLink(ctx, alice.ID, time.Minute); !errors.Is(err, memory.ErrTokenRevoked) {
				t.Errorf("link for a revoked token: %v, want ErrTokenRevoked", err)
			}

			// A race: many uses of one link at once, on both stores, let
			// exactly one in.
			_, _, _ = a.Tokens().Create(ctx, memory.TokenSpec{Human: "dave"})
			toks, err := a.Tokens().List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			dave := toks[len(toks)-1]
			for round := 0; round < 5; round++ {
				link, err := a.Tokens().CreateLoginLink(ctx, dave.ID, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				var wins, losses atomic.Int32
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := 0; i < 16; i++ {
					c := a
					if i%2 == 1 {
						c = b
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						_, err := c.Tokens().UseLoginLink(ctx, link)
						switch {
						case err == nil:
							wins.Add(1)
						case errors.Is(err, memory.ErrLoginLinkInvalid):
							losses.Add(1)
						default:
							t.Errorf("concurrent use: %v", err)
						}
					}()
				}
				close(start)
				wg.Wait()
				if wins.Load() != 1 || losses.Load() != 15 {
					t.Fatalf("round %d: %d uses let in, %d refused; want 1 and 15", round, wins.Load(), losses.Load())
				}
			}
		})
	}
}
