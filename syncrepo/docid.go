package syncrepo

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/big"
	"strings"

	"github.com/engram-go/engram/memory"
)

// URLPrefix starts an automerge URL.
const URLPrefix = "automerge:"

const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// EncodeDocumentID returns id as automerge-repo writes document ids:
// bs58check (base58 of the bytes followed by the first four bytes of their
// double SHA-256), with no version byte.
func EncodeDocumentID(id memory.DocumentID) string {
	sum := checksum(id[:])
	payload := append(append([]byte{}, id[:]...), sum[:4]...)
	n := new(big.Int).SetBytes(payload)
	var out []byte
	mod, base := new(big.Int), big.NewInt(58)
	for n.Sign() > 0 {
		n.DivMod(n, base, mod)
		out = append(out, alphabet[mod.Int64()])
	}
	for _, b := range payload {
		if b != 0 {
			break
		}
		out = append(out, alphabet[0])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// URL returns id's automerge: URL.
func URL(id memory.DocumentID) string { return URLPrefix + EncodeDocumentID(id) }

// ParseDocumentID decodes a bs58check document id of 16 bytes.
func ParseDocumentID(s string) (memory.DocumentID, error) {
	var id memory.DocumentID
	if s == "" || len(s) > 64 {
		return id, fmt.Errorf("%w: %q is not a bs58check document id", ErrURL, s)
	}
	n := new(big.Int)
	base := big.NewInt(58)
	zeros := 0
	for i := 0; i < len(s) && s[i] == alphabet[0]; i++ {
		zeros++
	}
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(alphabet, s[i])
		if d < 0 {
			return id, fmt.Errorf("%w: %q has a character outside base58", ErrURL, s)
		}
		n.Mul(n, base).Add(n, big.NewInt(int64(d)))
	}
	raw := append(make([]byte, zeros), n.Bytes()...)
	if n.Sign() == 0 {
		raw = make([]byte, zeros)
	}
	if len(raw) != len(id)+4 {
		return id, fmt.Errorf("%w: %q decodes to %d bytes, not %d", ErrURL, s, len(raw), len(id)+4)
	}
	sum := checksum(raw[:len(id)])
	if !bytes.Equal(sum[:4], raw[len(id):]) {
		return id, fmt.Errorf("%w: %q fails its checksum", ErrURL, s)
	}
	copy(id[:], raw)
	return id, nil
}

// ParseURL decodes an automerge: URL (a "#heads" suffix is not accepted:
// a peer syncs the whole document).
func ParseURL(u string) (memory.DocumentID, error) {
	rest, ok := strings.CutPrefix(u, URLPrefix)
	if !ok {
		return memory.DocumentID{}, fmt.Errorf("%w: %q does not start with %s", ErrURL, u, URLPrefix)
	}
	return ParseDocumentID(rest)
}

func checksum(b []byte) [32]byte {
	first := sha256.Sum256(b)
	return sha256.Sum256(first[:])
}
