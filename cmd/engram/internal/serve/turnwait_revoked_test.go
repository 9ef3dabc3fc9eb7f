package serve_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// A call that waited for its token's turn, or for its byte budget, does
// not run when the token was revoked while it waited: the token is
// checked again after the wait, as after a wait for the rate.
func TestTurnAndBytesWaitRevokedCallRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts serve.Options
		// occupy makes ada's next call wait and returns what ends the wait.
		occupy func(t *testing.T, d *door, tok string) func()
	}{
		{"turn", serve.Options{TokenConcurrency: 1}, func(t *testing.T, d *door, tok string) func() {
			sid := d.session(t, tok)
			go d.callStatus(t.Context(), t, tok, sid, holdCall)
			waitFor(t, "the held call", func() bool { return d.hold.running.Load() == 1 })
			return func() { close(d.hold.release) }
		}},
		{"bytes", serve.Options{TokenBytesRate: 2000, TokenBytesBurst: 2000}, func(t *testing.T, d *door, tok string) func() {
			sid := d.session(t, tok)
			if st, ok := d.callStatus(t.Context(), t, tok, sid, echoCall(1900)); st != 200 || !ok {
				t.Fatalf("the call spending the budget: status %d", st)
			}
			return func() {} // the budget refills by itself, in about a second
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDoor(t, &tc.opts)
			tk, tok, err := accesstoken.Of(d.store).Create(context.Background(), accesstoken.Spec{Agent: "ada"})
			if err != nil {
				t.Fatal(err)
			}
			sid := d.session(t, tok)
			end := tc.occupy(t, d, tok)
			before := d.calls.Load()
			done := make(chan *http.Response, 1)
			go func() {
				resp, err := d.postMCP(t.Context(), mcpHeader(tok, sid), echoCall(1500))
				if err != nil {
					t.Error(err)
				}
				done <- resp
			}()
			time.Sleep(200 * time.Millisecond) // it waits
			if err := accesstoken.Of(d.store).Revoke(context.Background(), tk.ID); err != nil {
				t.Fatal(err)
			}
			end()
			resp := <-done
			if resp == nil {
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode == 200 && d.calls.Load() > before {
				t.Fatalf("the call of a token revoked while it waited ran: %.120s", body)
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("the call of a token revoked while it waited: status %d, want 401: %.120s", resp.StatusCode, body)
			}
		})
	}
}

// The same for a web UI request: one that waited for its login's byte
// budget (holding its turn) is sent to sign in when the login's token
// was revoked meanwhile.
func TestBytesWaitRevokedUIRefused(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: 2000, TokenBytesBurst: 2000})
	cookie := d.loginCookie(t, "hal")
	all, err := accesstoken.Of(d.store).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	post := func(size int) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", d.url+"/ui/x", strings.NewReader(strings.Repeat("x", size)))
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Origin", d.url)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		return c.Do(req)
	}
	resp, err := post(1900) // spends the budget
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the POST spending the budget: status %d", resp.StatusCode)
	}
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := post(1500)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	time.Sleep(200 * time.Millisecond) // it waits most of a second
	for _, tk := range all {
		if tk.Human == "hal" {
			if err := accesstoken.Of(d.store).Revoke(context.Background(), tk.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	resp = <-done
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a UI POST whose token was revoked while it waited for its bytes: %d, %.80s", resp.StatusCode, body)
	}
}
