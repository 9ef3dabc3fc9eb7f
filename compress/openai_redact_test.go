package compress_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/engram-go/engram/compress"
)

// A malformed summarizer base URL is named masked.
func TestOpenAISummarizerHidesURLSecrets(t *testing.T) {
	_, err := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: "ftp://ada:SECRET@h/v1?api-key=SECRET", Model: "m"})
	if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "xxxxx") {
		t.Fatalf("err = %v", err)
	}
	// Without a well-formed scheme the URL reached the error as plain
	// text, password or pasted key included.
	for _, base := range []string{
		"ada:SECRET@llm.example.com/v1",
		"http:/ada:SECRET@llm.example.com/v1",
		"http//ada:SECRET@llm.example.com",
		"SECRETKEY",
	} {
		_, err := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: base, APIKey: "SECRETKEY", Model: "m"})
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("base %q: err = %v", base, err)
		}
	}
}

// Options logged by an application (fmt's %v and %+v, slog with either
// handler) printed the API key, the base URL's password and the headers
// as they were.
func TestOpenAIOptionsPrintMasked(t *testing.T) {
	o := compress.OpenAIOptions{BaseURL: "https://ada:SECRET1@h/v1?api-key=SECRET2", Model: "m", APIKey: "SECRET3",
		Header: http.Header{"Api-Key": {"SECRET4"}}}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("cfg", "opts", o)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("cfg", "opts", &o)
	for _, s := range []string{fmt.Sprintf("%v", o), fmt.Sprintf("%+v", &o), fmt.Sprintf("%#v", o), fmt.Sprint(o), buf.String()} {
		if strings.Contains(s, "SECRET") {
			t.Errorf("printed options %q show a secret", s)
		}
	}
}
