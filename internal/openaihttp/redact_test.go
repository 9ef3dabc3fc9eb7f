package openaihttp

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A base URL with user:password (or a key in its query)
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

// A server (a proxy, a misconfigured gateway) may echo the credentials it
// was sent in its error body: "Incorrect API key provided: Bearer sk-...",
// or the request's query with its api-key. The body is quoted in errors, so
// the client's own secrets are masked in it, in a status error's message
// and in what Quote and ErrorMessage return.
func TestErrorsHideEchoedSecrets(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		msg := "bad key " + r.Header.Get("Authorization") + " " + r.Header.Get("Api-Key") + " for " + r.URL.String()
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": msg}})
		w.Write(b)
	}
	srv, _ := server(t, echo)
	host := strings.TrimPrefix(srv.URL, "http://")
	c := &Client{URL: "http://ada:pw-s3cret@" + host + "/v1/embeddings?api-version=2024&api-key=q-s3cret",
		APIKey: "sk-s3cret", Header: http.Header{"Api-Key": {"h-s3cret"}}}
	_, err := c.Post(context.Background(), []byte(`{}`))
	if err == nil {
		t.Fatal("no error")
	}
	if msg := err.Error(); strings.Contains(msg, "s3cret") || !strings.Contains(msg, "bad key") {
		t.Errorf("error %q shows a secret (or lost the message)", msg)
	}
	body := []byte(`{"error":"no: sk-s3cret q-s3cret h-s3cret"}`)
	for _, s := range []string{c.ErrorMessage(body), c.Quote(body, 200)} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("%q shows a secret", s)
		}
	}
}

// A redirect to another host must not carry the client's credentials
// there: net/http drops Authorization on such a redirect, but not the
// other headers of Client.Header (Azure's "api-key"), nor the body.
func TestRedirectToOtherHostCarriesNoCredentials(t *testing.T) {
	var got http.Header
	other, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Write([]byte(`{}`))
	})
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	first, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+"/v1/embeddings", http.StatusTemporaryRedirect)
	})
	c := &Client{URL: first.URL + "/v1/embeddings", APIKey: "sk-s3cret", Header: http.Header{"Api-Key": {"h-s3cret"}}}
	c.Post(context.Background(), []byte(`{}`))
	for k, vs := range got {
		for _, v := range vs {
			if strings.Contains(v, "s3cret") {
				t.Errorf("the other host received %s: %s", k, v)
			}
		}
	}
}
