package serve_test

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	_ "github.com/engram-go/engram/memory/postgres"
)

// On both engines, a token revoked (by another process on the store) or
// expired is refused at /mcp, /sync and the web UI's login with 401, and
// a login link signs in exactly one of many concurrent uses; the others
// get 401 (or 429 from the failed-login limit), never a second login.
func TestRevokedExpiredTokensAndLinksOnBothEngines(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			target := filepath.Join(t.TempDir(), "door.db")
			if engine == "postgres" {
				target = pgtest.Start(t).NewDatabase(t)
			}
			d := newDoorAt(t, target, nil)
			other, err := memory.Open(ctx, target, nil) // another process on the store
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()

			live := d.token(t, accesstoken.Spec{Agent: "ada"})
			if resp := d.do(t, "POST", "/mcp", initBody, mcpHeader(live, "")); resp.StatusCode != http.StatusOK {
				t.Fatalf("live token: status %d, want 200", resp.StatusCode)
			}
			revoked, secret, err := accesstoken.Of(d.store).Create(ctx, accesstoken.Spec{Agent: "ada"})
			if err != nil {
				t.Fatal(err)
			}
			if err := accesstoken.Of(other).Revoke(ctx, revoked.ID); err != nil {
				t.Fatal(err)
			}
			expired := d.token(t, accesstoken.Spec{Agent: "ada", Expires: time.Millisecond})
			human, hsecret, err := accesstoken.Of(d.store).Create(ctx, accesstoken.Spec{Human: "hal"})
			if err != nil {
				t.Fatal(err)
			}
			if err := accesstoken.Of(other).Revoke(ctx, human.ID); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			for _, c := range []struct{ name, method, path, secret string }{
				{"revoked at /mcp", "POST", "/mcp", secret},
				{"expired at /mcp", "POST", "/mcp", expired},
				{"revoked at /sync", "GET", "/sync", secret},
				{"expired at /sync", "GET", "/sync", expired},
				{"revoked human at the login", "GET", "/ui/login?token=" + url.QueryEscape(hsecret), ""},
			} {
				h := mcpHeader(c.secret, "")
				if c.secret == "" {
					h = nil
				}
				resp := d.do(t, c.method, c.path, initBody, h)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s: status %d, want 401", c.name, resp.StatusCode)
				}
			}

			alice, _, err := accesstoken.Of(d.store).Create(ctx, accesstoken.Spec{Human: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			link, err := accesstoken.Of(other).CreateLoginLink(ctx, alice.ID, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			const uses = 6
			codes := make([]int, uses)
			var wg sync.WaitGroup
			for i := range uses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp := d.do(t, "GET", "/ui/login?link="+url.QueryEscape(link), "", nil)
					resp.Body.Close()
					codes[i] = resp.StatusCode
				}()
			}
			wg.Wait()
			in := 0
			for _, c := range codes {
				switch c {
				case http.StatusSeeOther:
					in++
				case http.StatusUnauthorized, http.StatusTooManyRequests:
				default:
					t.Errorf("a use of the login link: status %d", c)
				}
			}
			if in != 1 {
				t.Errorf("%d of %d concurrent uses of one login link signed in (statuses %v), want exactly 1", in, uses, codes)
			}
		})
	}
}
