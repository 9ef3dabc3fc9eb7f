package builder

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"

	"github.com/engram-go/engram/compress"
)

// TokenCounter counts the tokens of a text. It is the same interface as
// compress.TokenCounter. A counter that also has a Name method
// (counterNamer; CharCounter and BPECounter do) is reported by that name
// in Metadata, else by its Go type.
type TokenCounter interface {
	Count(text string) int
}

// counterNamer is the optional part of a TokenCounter that names it in
// Metadata (an encoding name, the key of persisted counts).
type counterNamer interface{ Name() string }

var _ compress.TokenCounter = TokenCounter(nil)

// Token encodings.
const (
	// EncodingCl100k is the GPT-3.5 / GPT-4 era BPE, the default for models
	// not known to use another.
	EncodingCl100k = "cl100k_base"
	// EncodingO200k is the BPE of gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3, o4.
	EncodingO200k = "o200k_base"
	// EncodingChars is the chars/4 estimate (CharCounter).
	EncodingChars = "chars"
)

// EncodingForModel names the BPE encoding for a model: o200k_base for the
// gpt-4o, gpt-4.1, gpt-4.5, gpt-5, chatgpt-4o, gpt-oss and o-series
// families, cl100k_base for everything else (GPT-3.5/4 and unknown models,
// where it is a close stand-in for English text).
func EncodingForModel(model string) string {
	n := normalizeModel(model)
	for _, p := range []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss"} {
		if strings.HasPrefix(n, p) {
			return EncodingO200k
		}
	}
	if isOSeries(n) {
		return EncodingO200k
	}
	return EncodingCl100k
}

// CharCounter estimates tokens as characters/4, rounded up.
type CharCounter struct{}

// Count returns ceil(runes/4).
func (CharCounter) Count(text string) int { return (utf8.RuneCountInString(text) + 3) / 4 }

// Name returns "chars".
func (CharCounter) Name() string { return EncodingChars }

// BPECounter counts tokens with a real BPE tokenizer (tiktoken's
// cl100k_base or o200k_base). Get one from Cache.Encoding. Special-token
// text such as "<|endoftext|>" is counted as ordinary text.
type BPECounter struct {
	name  string
	codec tokenizer.Codec
}

// Name returns the encoding's name.
func (c *BPECounter) Name() string { return c.name }

// Count returns the number of BPE tokens of text (chars/4 if the tokenizer
// fails, which it does not for valid input).
func (c *BPECounter) Count(text string) int {
	if text == "" {
		return 0
	}
	n, err := c.codec.Count(text)
	if err != nil {
		return CharCounter{}.Count(text)
	}
	return n
}

// lazyEncoding loads one BPE vocabulary on first use.
type lazyEncoding struct {
	once    sync.Once
	counter *BPECounter
	err     error
}

func (l *lazyEncoding) get(name string) (*BPECounter, error) {
	l.once.Do(func() {
		codec, err := tokenizer.Get(tokenizer.Encoding(name))
		if err != nil {
			l.err = fmt.Errorf("builder: load tokenizer %s: %w", name, err)
			return
		}
		l.counter = &BPECounter{name: name, codec: codec}
	})
	return l.counter, l.err
}

// maxCachedCounts bounds the token-count cache; past it the cache starts
// over.
const maxCachedCounts = 1 << 17

// minCachedLen: shorter texts are counted directly.
const minCachedLen = 1

type countKey struct {
	enc  uint8
	hash uint64
	n    int
}

// countCache remembers token counts by (encoding, hash of the text).
type countCache struct {
	seed maphash.Seed
	mu   sync.RWMutex
	m    map[countKey]int32
}

func (c *countCache) lookup(k countKey) (int, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return int(v), ok
}

func (c *countCache) store(k countKey, v int) {
	c.mu.Lock()
	if len(c.m) >= maxCachedCounts {
		clear(c.m)
	}
	c.m[k] = int32(v)
	c.mu.Unlock()
}

// cachedCounter counts through the cache.
type cachedCounter struct {
	inner TokenCounter
	enc   uint8
	cache *countCache
}

func (c cachedCounter) key(text string) countKey {
	return countKey{enc: c.enc, hash: maphash.String(c.cache.seed, text), n: len(text)}
}

// name is the encoding's name, the key of persisted counts.
func (c cachedCounter) name() string {
	if c.enc == 2 {
		return EncodingO200k
	}
	return EncodingCl100k
}

func (c cachedCounter) Count(text string) int {
	if len(text) < minCachedLen {
		return c.inner.Count(text)
	}
	k := c.key(text)
	if v, ok := c.cache.lookup(k); ok {
		return v
	}
	v := c.inner.Count(text)
	c.cache.store(k, v)
	return v
}

// Cache holds what builds can reuse (it is not the store, memory.Store): the
// BPE tokenizers (each loaded once, on first use), token counts of texts already counted (keyed by a hash of
// the text, so an unchanged block is not tokenized again), and the message
// history already read from each source (only newer messages are fetched,
// and batches known complete are not asked about again), and each agent's
// block listings with the memory.BlocksStamp they were read at (a warm
// build asks only for the stamp and lists blocks again when it changed).
// It is safe for concurrent use; share one across builds through
// ContextConfig.Cache.
type Cache struct {
	cl100k, o200k lazyEncoding
	counts        countCache

	histMu sync.Mutex
	hist   map[histKey]*histEntry

	blocksMu sync.Mutex
	blocks   map[blocksKey]*blocksEntry

	prefixMu sync.Mutex
	prefix   map[[2]string]prefixSig // by agent and model

	defs definitionMemo
}

// prefixSig is what a build leaves to compare the next one with.
type prefixSig struct {
	tools    string
	sections []sectionSig
}

type sectionSig struct {
	name, hash string
	start, len int
}

// NewCache returns an empty Cache. Nothing is loaded until used.
func NewCache() *Cache {
	return &Cache{
		counts: countCache{seed: maphash.MakeSeed(), m: make(map[countKey]int32)},
		hist:   make(map[histKey]*histEntry),
		blocks: make(map[blocksKey]*blocksEntry),
		prefix: make(map[[2]string]prefixSig),
	}
}

// prefixChange compares a build with the previous one of the same agent
// and model and remembers it for the next.
func (c *Cache) prefixChange(agent, model, tools, system string, sections []Section, bounds [][2]int) *PrefixChange {
	sig := prefixSig{tools: tools, sections: make([]sectionSig, len(sections))}
	for i, s := range sections {
		sig.sections[i] = sectionSig{name: s.Name, hash: s.Hash, start: bounds[i][0], len: len(s.Text)}
	}
	k := [2]string{agent, normalizeModel(model)}
	c.prefixMu.Lock()
	prev, ok := c.prefix[k]
	c.prefix[k] = sig
	c.prefixMu.Unlock()
	if !ok {
		return nil
	}
	if prev.tools != tools {
		return &PrefixChange{Section: "tools", Reason: "tools changed"}
	}
	for i, s := range sig.sections {
		if i >= len(prev.sections) {
			return &PrefixChange{Section: s.name, Reason: "section added: " + s.name, CommonPrefix: s.start}
		}
		p := prev.sections[i]
		if p.name != s.name {
			return &PrefixChange{Section: s.name, Reason: "section added or removed before " + s.name, CommonPrefix: min(p.start, s.start)}
		}
		if p.hash == s.hash {
			continue
		}
		text := system[s.start : s.start+s.len]
		reason := sectionChangeReason(s.name)
		if s.name == SectionLibrary && p.len <= len(text) && libraryGrew(text, p) {
			reason = "context library grew"
		}
		return &PrefixChange{Section: s.name, Reason: reason, CommonPrefix: s.start}
	}
	if len(prev.sections) > len(sig.sections) {
		p := prev.sections[len(sig.sections)]
		return &PrefixChange{Section: p.name, Reason: "section removed: " + p.name, CommonPrefix: len(system)}
	}
	return &PrefixChange{CommonPrefix: len(system)}
}

// libraryGrew reports whether the library section text is the previous
// one with artifacts appended (its old closing tag aside).
func libraryGrew(text string, p sectionSig) bool {
	const closing = "\n</context_library>"
	n := p.len - len(closing)
	return n > 0 && strings.HasSuffix(text, closing) && len(text) > p.len &&
		shortHash(text[:n]+closing) == p.hash
}

func sectionChangeReason(name string) string {
	switch name {
	case SectionBase:
		return "instructions changed"
	case SectionToolRules:
		return "tool rules changed"
	case SectionCore, SectionWorking:
		return "memory changed"
	case SectionAttachments:
		return "attachments changed"
	case SectionLibrary:
		return "context library changed"
	case SectionSkills:
		return "skills changed"
	case SectionRecalled:
		return "recalled memories changed"
	case SectionEnvironment:
		return "environment changed"
	case SectionActivity:
		return "activity changed"
	}
	return name + " changed"
}

// Encoding returns the counter of an encoding (EncodingCl100k,
// EncodingO200k or EncodingChars), cached: counts of texts longer than a
// few words are remembered. The BPE vocabulary is loaded on first use.
func (c *Cache) Encoding(name string) (TokenCounter, error) {
	var (
		inner TokenCounter
		id    uint8
		err   error
	)
	switch name {
	case EncodingCl100k:
		inner, err = c.cl100k.get(name)
		id = 1
	case EncodingO200k:
		inner, err = c.o200k.get(name)
		id = 2
	case EncodingChars:
		return CharCounter{}, nil
	default:
		return nil, fmt.Errorf("%w: unknown token encoding %q (want %s, %s or %s)", ErrInvalid, name, EncodingCl100k, EncodingO200k, EncodingChars)
	}
	if err != nil {
		return nil, err
	}
	return cachedCounter{inner: inner, enc: id, cache: &c.counts}, nil
}

// ForModel returns the cached counter for a model (EncodingForModel).
func (c *Cache) ForModel(model string) (TokenCounter, error) {
	return c.Encoding(EncodingForModel(model))
}

// CachedCounts reports how many token counts are cached.
func (c *Cache) CachedCounts() int {
	c.counts.mu.RLock()
	defer c.counts.mu.RUnlock()
	return len(c.counts.m)
}

// Reset forgets cached counts, history and block listings (tokenizers
// stay loaded).
func (c *Cache) Reset() {
	c.counts.mu.Lock()
	clear(c.counts.m)
	c.counts.mu.Unlock()
	c.histMu.Lock()
	clear(c.hist)
	c.histMu.Unlock()
	c.blocksMu.Lock()
	clear(c.blocks)
	c.blocksMu.Unlock()
}

// counterName names a counter for Metadata.
func counterName(c TokenCounter) string {
	switch v := c.(type) {
	case cachedCounter:
		return counterName(v.inner)
	case counterNamer:
		return v.Name()
	}
	return fmt.Sprintf("%T", c)
}

// CountStore persists token counts across processes, so a cold start does
// not tokenize every block again; the store (*memory.Store) implements it.
// It is ContextConfig.TokenCounts; builds without it count every text in
// this process, with the same results. Counts are keyed by encoding name
// and TextHash.
type CountStore interface {
	TokenCounts(ctx context.Context, encoding string, hashes []uint64) (map[uint64]int, error)
	SaveTokenCounts(ctx context.Context, encoding string, counts map[uint64]int) error
}

// TextHash is the stable key of a text's token count: FNV-1a (64 bits)
// over its bytes, then its length.
func TextHash(text string) uint64 {
	// hash/fnv over []byte(text) copied the text on every warm build;
	// this is the same function over the string in place.
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(text); i++ {
		h ^= uint64(text[i])
		h *= prime
	}
	n := uint64(len(text))
	for range 8 {
		h ^= n & 0xff
		h *= prime
		n >>= 8
	}
	return h
}

// saveCountsWait bounds how long a build waits to save counts.
const saveCountsWait = 100 * time.Millisecond

// minPersistedMiss: below this many uncounted bytes in one build,
// tokenizing is cheaper than a round trip to the store.
const minPersistedMiss = 8 << 10

// countItems sets the token count of every item (its text is
// sys[start:end]). Through a Cache's counter, texts already counted in
// this process are free; the rest are looked up in cs (the store's
// CountStore, nil when it has none; only when there is enough to count),
// and what still has no count is tokenized and saved back. cs is only a
// cache: an error reading or saving it costs time, never a different
// count.
func countItems(ctx context.Context, counter TokenCounter, cs CountStore, sys string, items []item) {
	cc, ok := counter.(cachedCounter)
	if !ok {
		for i := range items {
			items[i].tokens = counter.Count(sys[items[i].start:items[i].end])
		}
		return
	}
	var miss []int
	missBytes := 0
	for i := range items {
		text := sys[items[i].start:items[i].end]
		if v, ok := cc.cache.lookup(cc.key(text)); ok {
			items[i].tokens = v
			continue
		}
		miss = append(miss, i)
		missBytes += len(text)
	}
	if len(miss) == 0 {
		return
	}
	persist := cs != nil && missBytes >= minPersistedMiss && ctx.Err() == nil
	enc := cc.name()
	hashes := make([]uint64, len(miss))
	var saved map[uint64]int
	if persist {
		for j, i := range miss {
			hashes[j] = TextHash(sys[items[i].start:items[i].end])
		}
		saved, _ = cs.TokenCounts(ctx, enc, hashes)
	}
	fresh := map[uint64]int{}
	for j, i := range miss {
		text := sys[items[i].start:items[i].end]
		v, ok := saved[hashes[j]] // saved is nil unless persist
		if !ok {
			v = cc.inner.Count(text)
			if persist {
				fresh[hashes[j]] = v
			}
		}
		cc.cache.store(cc.key(text), v)
		items[i].tokens = v
	}
	if len(fresh) > 0 {
		// Best effort, and never a long wait on another writer's lock.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveCountsWait)
		_ = cs.SaveTokenCounts(sctx, enc, fresh)
		cancel()
	}
}
