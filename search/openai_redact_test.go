package search_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/engram-go/engram/search"
)

// An embedder base URL with user:password (or a key in
// its query) is masked in every error the embedder returns.
func TestOpenAIEmbedderHidesURLSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"data":[]}`)) // wrong count: a decode error naming the URL
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, base := range []string{
		"ftp://ada:SECRET@" + host,
		"http://ada:SECRET@" + host + "/v1",
		"http://" + host + "/v1?api-key=SECRET",
	} {
		e, err := search.NewOpenAI(&search.OpenAIOptions{BaseURL: base, Model: "m", Dimensions: 3})
		if err == nil {
			_, err = e.Embed(context.Background(), []string{"x"})
		}
		if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("base %q: err = %v", base, err)
		}
	}
}

// Options logged by an application (fmt's %v and %+v, slog with either
// handler) printed the API key, the base URL's password and the headers
// (an Azure api-key) as they were.
func TestOpenAIOptionsPrintMasked(t *testing.T) {
	o := search.OpenAIOptions{BaseURL: "https://ada:SECRET1@h/v1?api-key=SECRET2", Model: "m", APIKey: "SECRET3",
		Header: http.Header{"Api-Key": {"SECRET4"}}}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("cfg", "opts", o)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("cfg", "opts", &o)
	for _, s := range []string{fmt.Sprintf("%v", o), fmt.Sprintf("%+v", &o), fmt.Sprintf("%#v", o), fmt.Sprint(o), buf.String()} {
		if strings.Contains(s, "SECRET") || !strings.Contains(s, "Model") && !strings.Contains(s, "m") {
			t.Errorf("printed options %q show a secret", s)
		}
	}
}
