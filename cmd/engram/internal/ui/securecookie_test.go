package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/engram-go/engram/memory"
)

// Served over TLS (engram serve --tls-cert), the session cookie went out
// without Secure: cookies are not per port or scheme, so a browser would
// send it to a plain-HTTP service on the same host. Over TLS it is Secure;
// over plain HTTP (engram ui on 127.0.0.1) it cannot be.
func TestSessionCookieSecureOverTLS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    bool
		secure bool
	}{{"tls", true, true}, {"plain", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := memory.Open(context.Background(), ":memory:", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			srv, err := New(s, &Options{Token: testToken})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ts := httptest.NewUnstartedServer(srv)
			if tc.tls {
				ts.StartTLS()
			} else {
				ts.Start()
			}
			defer ts.Close()
			client := ts.Client()
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			res, err := client.Get(ts.URL + "/?token=" + testToken)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			cs := res.Cookies()
			if len(cs) != 1 {
				t.Fatalf("sign-in set %d cookies", len(cs))
			}
			if cs[0].Secure != tc.secure {
				t.Errorf("session cookie Secure = %v, want %v", cs[0].Secure, tc.secure)
			}
		})
	}
}
