package sqlite

import "testing"

func TestVarint(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		v    uint64
		n    int
		name string
	}{
		{[]byte{0x00}, 0, 1, "zero"},
		{[]byte{0x7f, 0x05}, 127, 1, "one byte"},
		{[]byte{0x81, 0x00}, 128, 2, "two bytes"},
		{[]byte{0x8a, 0x66, 0x01}, 1382, 2, "two bytes, more follows"},
		{[]byte{0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 1<<57 | 1, 9, "nine bytes: the last is whole"},
		{[]byte{0x81}, 0, 0, "cut short"},
		{nil, 0, 0, "empty"},
	} {
		if v, n := varint(tc.b); v != tc.v || n != tc.n {
			t.Errorf("%s: varint(%x) = %d, %d; want %d, %d", tc.name, tc.b, v, n, tc.v, tc.n)
		}
	}
}
