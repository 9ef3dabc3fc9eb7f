package syncrepo

import (
	"errors"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/engram-go/engram/memory"
)

// Vectors from automerge-repo 2.5.6's stringifyAutomergeUrl.
func TestDocumentIDs(t *testing.T) {
	for _, tc := range []struct {
		id  memory.DocumentID
		url string
	}{
		{memory.DocumentID{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, "automerge:1Bhh3pU9gLXZiNDL6PEa1Gs9fh"},
		{memory.DocumentID{15: 1}, "automerge:1111111111111118k14cG"},
		{memory.DocumentID{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}, "automerge:4ZrjxJnU1LA5xSyrWMNuXTozYEvA"},
	} {
		if got := URL(tc.id); got != tc.url {
			t.Errorf("URL(%x) = %s, want %s", tc.id, got, tc.url)
		}
		if got, err := ParseURL(tc.url); err != nil || got != tc.id {
			t.Errorf("ParseURL(%s) = %x, %v", tc.url, got, err)
		}
	}
	for _, bad := range []string{"", "automerge:", "automerge:0OIl", "automerge:1Bhh3pU9gLXZiNDL6PEa1Gs9fi", "automerge:2E3vuoCUWBJ", "x:1Bhh3pU9gLXZiNDL6PEa1Gs9fh"} {
		if _, err := ParseURL(bad); !errors.Is(err, ErrURL) {
			t.Errorf("ParseURL(%q): %v, want ErrURL", bad, err)
		}
	}
}

// Frames as cbor-x writes them: peerMetadata or metadata, count as an
// integer or a float64.
func TestDecodeMessage(t *testing.T) {
	enc := func(m map[string]any) []byte {
		b, err := cbor.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		check func(Message) bool
		err   bool
	}{
		{"join", enc(map[string]any{"type": "join", "senderId": "p", "peerMetadata": map[string]any{"isEphemeral": true}, "supportedProtocolVersions": []string{"1"}}),
			func(m Message) bool {
				return m.SenderID == "p" && m.PeerMetadata["isEphemeral"] == true && m.SupportedProtocolVersions[0] == "1"
			}, false},
		{"metadata", enc(map[string]any{"type": "join", "metadata": map[string]any{"a": 1}}),
			func(m Message) bool { return m.PeerMetadata != nil }, false},
		{"count int", enc(map[string]any{"type": "ephemeral", "count": 7}), func(m Message) bool { return m.Count == 7 }, false},
		{"count float", enc(map[string]any{"type": "ephemeral", "count": 7.0}), func(m Message) bool { return m.Count == 7 }, false},
		{"count fraction", enc(map[string]any{"type": "ephemeral", "count": 7.5}), nil, true},
		{"count text", enc(map[string]any{"type": "ephemeral", "count": "7"}), nil, true},
		{"no type", enc(map[string]any{"senderId": "p"}), nil, true},
		{"not a map", enc(map[string]any{"type": "sync"})[:3], nil, true},
		{"sync", enc(map[string]any{"type": "sync", "documentId": "d", "data": []byte{1, 2}}),
			func(m Message) bool { return m.DocumentID == "d" && len(m.Data) == 2 }, false},
	} {
		m, err := DecodeMessage(tc.frame)
		if tc.err {
			if !errors.Is(err, ErrFrame) {
				t.Errorf("%s: %v, want ErrFrame", tc.name, err)
			}
			continue
		}
		if err != nil || !tc.check(m) {
			t.Errorf("%s: %+v, %v", tc.name, m, err)
		}
	}
}

// Any bytes decode to a message or ErrFrame, and a decoded message
// encodes and decodes to itself.
func FuzzDecodeMessage(f *testing.F) {
	for _, m := range []Message{
		{Type: TypeJoin, SenderID: "p", PeerMetadata: map[string]any{"isEphemeral": true}, SupportedProtocolVersions: []string{"1"}},
		{Type: TypeSync, SenderID: "p", TargetID: "s", DocumentID: "1Bhh3pU9gLXZiNDL6PEa1Gs9fh", Data: []byte{0x42, 1, 2}},
		{Type: TypeEphemeral, SessionID: "x", Count: 3, Data: []byte{0xa0}},
	} {
		b, err := EncodeMessage(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := DecodeMessage(frame)
		if err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("error not ErrFrame: %v", err)
			}
			return
		}
		b, err := EncodeMessage(m)
		if err != nil {
			return // peer metadata holding something CBOR cannot write back (NaN keys and such)
		}
		m2, err := DecodeMessage(b)
		if err != nil || m2.Type != m.Type || m2.DocumentID != m.DocumentID || string(m2.Data) != string(m.Data) || m2.SenderID != m.SenderID {
			t.Fatalf("round trip: %+v → %+v, %v", m, m2, err)
		}
	})
}
