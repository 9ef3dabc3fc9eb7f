package compress_test

import (
	"strings"
	"testing"

	"github.com/engram-go/engram/compress"
)

// Issue 29 item 8: a malformed summarizer base URL is named masked.
func TestOpenAISummarizerHidesURLSecrets(t *testing.T) {
	_, err := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: "ftp://ada:SECRET@h/v1?api-key=SECRET", Model: "m"})
	if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "xxxxx") {
		t.Fatalf("err = %v", err)
	}
}
