package openaihttp

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// Issue 29 item 8: a base URL with user:password (or a key in its query)
// never appears in an error, whatever step failed.
func TestErrorsHideURLSecrets(t *testing.T) {
	srv, _ := server(t, status(http.StatusInternalServerError, `{"error":"boom"}`))
	host := strings.TrimPrefix(srv.URL, "http://")
	closed, _ := server(t, status(200, "{}"))
	closed.Close()
	closedHost := strings.TrimPrefix(closed.URL, "http://")
	for _, tc := range []struct{ name, url string }{
		{"status", "http://ada:s3cret@" + host + "/v1/embeddings"},
		{"status query key", "http://" + host + "/v1/embeddings?api-key=s3cret"},
		{"send", "http://ada:s3cret@" + closedHost + "/v1/embeddings?api-key=s3cret"},
		{"bad escape", "http://ada:s3cret%ZZ@" + host + "/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{URL: tc.url}
			_, err := c.Post(context.Background(), []byte(`{}`))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "s3cret") || !strings.Contains(msg, "xxxxx") {
				t.Fatalf("error %q shows the secret or no mask", msg)
			}
			if e, ok := err.(*Error); !ok || strings.Contains(e.URL, "s3cret") {
				t.Fatalf("Error.URL holds the secret: %#v", err)
			}
		})
	}
}
