package openaihttp

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// ErrorMessage extracts a readable message from an error body: OpenAI's
// {"error":{"message":...,"type":...}}, Ollama's {"error":"..."}, a
// top-level "message", or else the body itself, clipped by ClipBytes to
// 300 bytes and quoted.
func ErrorMessage(raw []byte) string {
	return errorMessage(raw, ClipBytes)
}

func errorMessage(raw []byte, clip func(string, int) string) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &v) == nil {
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		if json.Unmarshal(v.Error, &obj) == nil && obj.Message != "" {
			if obj.Type != "" {
				return obj.Message + " (" + obj.Type + ")"
			}
			return obj.Message
		}
		if v.Message != "" {
			return v.Message
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "empty body"
	}
	return quote(raw, 300, clip)
}

// Quote returns raw shortened to about n bytes by ClipBytes, quoted.
func Quote(raw []byte, n int) string {
	return quote(raw, n, ClipBytes)
}

func quote(raw []byte, n int, clip func(string, int) string) string {
	return strconv.Quote(clip(string(raw), n))
}

// ClipBytes returns s if it has at most n bytes, else its longest prefix of
// at most n bytes that ends on a rune boundary, followed by "…".
func ClipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
