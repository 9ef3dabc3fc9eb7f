package accesstoken_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/accesstoken"
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
			now, a, b := twoStores(t, engine)

			alice, _, err := accesstoken.Of(a).Create(ctx, accesstoken.Spec{Human: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			agent, _, err := accesstoken.Of(a).Create(ctx, accesstoken.Spec{Agent: "ada"})
			if err != nil {
				t.Fatal(err)
			}

			// Refused: an agent's token, no token, bad lifetimes.
			if _, err := accesstoken.Of(a).CreateLoginLink(ctx, agent.ID, time.Minute); !errors.Is(err, accesstoken.ErrNotHuman) {
				t.Errorf("link for an agent token: %v, want ErrInvalidArgument", err)
			}
			if _, err := accesstoken.Of(a).CreateLoginLink(ctx, 999, time.Minute); !errors.Is(err, memory.ErrNotFound) {
				t.Errorf("link for no token: %v, want ErrNotFound", err)
			}
			for _, ttl := range []time.Duration{0, -time.Minute, accesstoken.MaxLoginLinkTTL + time.Second} {
				if _, err := accesstoken.Of(a).CreateLoginLink(ctx, alice.ID, ttl); !errors.Is(err, memory.ErrInvalidArgument) {
					t.Errorf("link lifetime %v: %v, want ErrInvalidArgument", ttl, err)
				}
			}

			// One use signs in; the second (on the other store) is refused.
			secret, err := accesstoken.Of(a).CreateLoginLink(ctx, alice.ID, 15*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(secret, accesstoken.LoginLinkPrefix) || len(secret) < len(accesstoken.LoginLinkPrefix)+43 {
				t.Fatalf("secret %q: want prefix %q and ≥256 bits", secret, accesstoken.LoginLinkPrefix)
			}
			got, err := accesstoken.Of(b).UseLoginLink(ctx, secret)
			if err != nil || got.ID != alice.ID || got.Human != "alice" {
				t.Fatalf("UseLoginLink = %+v, %v; want token %d of alice", got, err, alice.ID)
			}
			if _, err := accesstoken.Of(a).UseLoginLink(ctx, secret); !errors.Is(err, accesstoken.ErrLoginLinkInvalid) {
				t.Fatalf("second use: %v, want ErrLoginLinkInvalid", err)
			}

			// Unknown or malformed secrets; a token is not a link.
			_, tokSecret, _ := accesstoken.Of(a).Create(ctx, accesstoken.Spec{Human: "bob"})
			for _, bad := range []string{"", accesstoken.LoginLinkPrefix, secret + "x", secret[:len(secret)-1], tokSecret, strings.Repeat("x", 300)} {
				if _, err := accesstoken.Of(a).UseLoginLink(ctx, bad); !errors.Is(err, accesstoken.ErrLoginLinkInvalid) {
					t.Errorf("UseLoginLink(%.20q…): %v, want ErrLoginLinkInvalid", bad, err)
				} else if bad != "" && strings.Contains(err.Error(), bad) {
					t.Errorf("the error shows the secret: %v", err)
				}
			}

			// Expired: by the store's clock, exactly at the lifetime's end.
			expiring, err := accesstoken.Of(a).CreateLoginLink(ctx, alice.ID, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			now.Add(int64(time.Minute))
			if _, err := accesstoken.Of(b).UseLoginLink(ctx, expiring); !errors.Is(err, accesstoken.ErrLoginLinkInvalid) {
				t.Fatalf("expired link: %v, want ErrLoginLinkInvalid", err)
			}

			// A link outlives no token: not made past the token's expiry,
			// refused once its token is revoked.
			short, _, err := accesstoken.Of(a).Create(ctx, accesstoken.Spec{Human: "carol", Expires: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			capped, err := accesstoken.Of(a).CreateLoginLink(ctx, short.ID, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			now.Add(int64(time.Minute))
			if _, err := accesstoken.Of(a).UseLoginLink(ctx, capped); !errors.Is(err, accesstoken.ErrLoginLinkInvalid) {
				t.Errorf("link past its token's expiry: %v, want ErrLoginLinkInvalid", err)
			}
			if _, err := accesstoken.Of(a).CreateLoginLink(ctx, short.ID, time.Minute); !errors.Is(err, accesstoken.ErrExpired) {
				t.Errorf("link for an expired token: %v, want ErrExpired", err)
			}
			revoked, err := accesstoken.Of(a).CreateLoginLink(ctx, alice.ID, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if err := accesstoken.Of(b).Revoke(ctx, alice.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := accesstoken.Of(a).UseLoginLink(ctx, revoked); !errors.Is(err, accesstoken.ErrRevoked) {
				t.Errorf("link of a revoked token: %v, want ErrRevoked", err)
			}
			if _, err := accesstoken.Of(a).CreateLoginLink(ctx, alice.ID, time.Minute); !errors.Is(err, accesstoken.ErrRevoked) {
				t.Errorf("link for a revoked token: %v, want ErrRevoked", err)
			}

			// A race: many uses of one link at once, on both stores, let
			// exactly one in.
			_, _, _ = accesstoken.Of(a).Create(ctx, accesstoken.Spec{Human: "dave"})
			toks, err := accesstoken.Of(a).List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			dave := toks[len(toks)-1]
			for round := 0; round < 5; round++ {
				link, err := accesstoken.Of(a).CreateLoginLink(ctx, dave.ID, time.Hour)
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
						_, err := accesstoken.Of(c).UseLoginLink(ctx, link)
						switch {
						case err == nil:
							wins.Add(1)
						case errors.Is(err, accesstoken.ErrLoginLinkInvalid):
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
