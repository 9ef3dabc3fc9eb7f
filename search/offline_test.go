package search_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"testing"

	"github.com/engram-go/engram/search"
)

func TestOfflineDeterministic(t *testing.T) {
	e := search.NewOffline(0)
	if e.Dimensions() != 384 || e.Name() != "offline-hash-v1/384" {
		t.Fatalf("%d %q", e.Dimensions(), e.Name())
	}
	texts := []string{"The quick brown fox jumps over the lazy dog.", "", "日本語のテキスト", "Engines, engine, engineering!"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for i, v := range vecs {
		var norm float64
		for _, f := range v {
			norm += float64(f) * float64(f)
			binary.Write(h, binary.LittleEndian, math.Float32bits(f))
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Errorf("text %d: norm %v", i, norm)
		}
		again := e.Vector(texts[i])
		for j := range v {
			if again[j] != v[j] {
				t.Fatalf("text %d: not deterministic", i)
			}
		}
	}
	// A fixed digest guards against accidental changes to the features or
	// the hashing: vectors stored by one version must match the next.
	const want = "b182cc7d6ccc8a6a5f70bac144423c052b4425a864085fa3266296f009b705b0"
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("offline-hash-v1 vectors changed: digest %s (if intended, bump the version in Name)", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, texts); err == nil {
		t.Error("cancelled Embed succeeded")
	}
}

func TestOfflineSimilarity(t *testing.T) {
	e := search.NewOffline(384)
	d := func(a, b string) float64 { return search.CosineDistance(e.Vector(a), e.Vector(b)) }
	q := "deploying the web server to production"
	near := d(q, "how we deploy web servers in production")
	far := d(q, "recipe for chocolate cake with cherries")
	if !(near < far) || near > 0.8 || far < 0.8 {
		t.Errorf("near %v far %v", near, far)
	}
	// Inflections and typos still overlap through stems and trigrams.
	if d("engineering", "engineer") > 0.6 || d("kubernetes", "kubernets") > 0.7 {
		t.Errorf("inflection %v typo %v", d("engineering", "engineer"), d("kubernetes", "kubernets"))
	}
	if got := d("same text", "same text"); math.Abs(got) > 1e-6 {
		t.Errorf("self distance %v", got)
	}
}
