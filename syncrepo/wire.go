package syncrepo

import (
	"fmt"
	"math"

	"github.com/fxamacker/cbor/v2"
)

// ProtocolVersion is the automerge-repo network protocol version a
// Session speaks.
const ProtocolVersion = "1"

// Message types of the automerge-repo network protocol.
const (
	TypeJoin           = "join"
	TypePeer           = "peer"
	TypeError          = "error"
	TypeSync           = "sync"
	TypeRequest        = "request"
	TypeDocUnavailable = "doc-unavailable"
	TypeEphemeral      = "ephemeral"
)

// Message is one frame of the protocol: a CBOR map, one per WebSocket
// binary message. Fields a type does not use are left zero.
type Message struct {
	Type     string
	SenderID string
	TargetID string
	// DocumentID is the bs58check document id (sync, request,
	// doc-unavailable, ephemeral).
	DocumentID string
	// Data is an automerge sync message (sync, request) or an ephemeral
	// message's CBOR payload.
	Data []byte
	// PeerMetadata (join, peer); a peer may send it as "metadata".
	PeerMetadata map[string]any
	// SupportedProtocolVersions (join) and SelectedProtocolVersion (peer).
	SupportedProtocolVersions []string
	SelectedProtocolVersion   string
	// Message is an error message's text.
	Message string
	// SessionID and Count identify an ephemeral message (count grows
	// within a session).
	SessionID string
	Count     uint64
}

// wireMessage is the CBOR form. Numbers are decoded as any: cbor-x sends
// an integral count as a float64 when it does not fit a small int.
type wireMessage struct {
	Type                      string         `cbor:"type"`
	SenderID                  string         `cbor:"senderId,omitempty"`
	TargetID                  string         `cbor:"targetId,omitempty"`
	DocumentID                string         `cbor:"documentId,omitempty"`
	Data                      []byte         `cbor:"data,omitempty"`
	PeerMetadata              map[string]any `cbor:"peerMetadata,omitempty"`
	Metadata                  map[string]any `cbor:"metadata,omitempty"`
	SupportedProtocolVersions []string       `cbor:"supportedProtocolVersions,omitempty"`
	SelectedProtocolVersion   string         `cbor:"selectedProtocolVersion,omitempty"`
	Message                   string         `cbor:"message,omitempty"`
	SessionID                 string         `cbor:"sessionId,omitempty"`
	Count                     any            `cbor:"count,omitempty"`
}

// decMode bounds what one frame may make the decoder allocate beyond its
// own size: peer metadata is a small map.
var decMode, _ = cbor.DecOptions{
	MaxNestedLevels:  16,
	MaxArrayElements: 1024,
	MaxMapPairs:      1024,
	DupMapKey:        cbor.DupMapKeyEnforcedAPF,
	IndefLength:      cbor.IndefLengthAllowed,
	DefaultMapType:   nil,
}.DecMode()

var encMode, _ = cbor.EncOptions{Sort: cbor.SortNone}.EncMode()

// DecodeMessage decodes one frame.
func DecodeMessage(frame []byte) (Message, error) {
	var w wireMessage
	if err := decMode.Unmarshal(frame, &w); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrFrame, err)
	}
	if w.Type == "" {
		return Message{}, fmt.Errorf("%w: no message type", ErrFrame)
	}
	m := Message{Type: w.Type, SenderID: w.SenderID, TargetID: w.TargetID, DocumentID: w.DocumentID, Data: w.Data,
		PeerMetadata: w.PeerMetadata, SupportedProtocolVersions: w.SupportedProtocolVersions,
		SelectedProtocolVersion: w.SelectedProtocolVersion, Message: w.Message, SessionID: w.SessionID}
	if m.PeerMetadata == nil {
		m.PeerMetadata = w.Metadata
	}
	switch c := w.Count.(type) {
	case nil:
	case uint64:
		m.Count = c
	case int64:
		if c < 0 {
			return Message{}, fmt.Errorf("%w: negative count %d", ErrFrame, c)
		}
		m.Count = uint64(c)
	case float64:
		if c < 0 || c != math.Trunc(c) || c > 1<<53 {
			return Message{}, fmt.Errorf("%w: count %v is not a whole number", ErrFrame, c)
		}
		m.Count = uint64(c)
	case float32:
		if c < 0 || float64(c) != math.Trunc(float64(c)) || c > 1<<24 {
			return Message{}, fmt.Errorf("%w: count %v is not a whole number", ErrFrame, c)
		}
		m.Count = uint64(c)
	default:
		return Message{}, fmt.Errorf("%w: count is a %T, not a number", ErrFrame, c)
	}
	return m, nil
}

// EncodeMessage encodes m as one frame.
func EncodeMessage(m Message) ([]byte, error) {
	w := wireMessage{Type: m.Type, SenderID: m.SenderID, TargetID: m.TargetID, DocumentID: m.DocumentID, Data: m.Data,
		PeerMetadata: m.PeerMetadata, SupportedProtocolVersions: m.SupportedProtocolVersions,
		SelectedProtocolVersion: m.SelectedProtocolVersion, Message: m.Message, SessionID: m.SessionID}
	if m.Type == TypeEphemeral {
		w.Count = m.Count
	}
	if m.Type == TypePeer && w.PeerMetadata == nil {
		w.PeerMetadata = map[string]any{}
	}
	b, err := encMode.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("syncrepo: encode %s message: %w", m.Type, err)
	}
	return b, nil
}
