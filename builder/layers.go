package builder

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// Layer names a part of the request that gives way when the whole request
// does not fit its input budget (see ContextConfig.TruncationOrder).
type Layer string

// The layers that can give way. Everything else never does: base
// instructions, tool rules, the skills list, the activity section, the
// environment, Core blocks, essential attachments, non-recoverable library
// artifacts and the active batch with the current message and its
// artifacts.
const (
	// LayerHistory: oldest messages first, whole batches, through the
	// configured compress.MessageCompressor.
	LayerHistory Layer = "history"
	// LayerRecalled: the least relevant recalled memories first.
	LayerRecalled Layer = "recalled_memories"
	// LayerLibrary: the context library's recoverable artifacts become
	// previews (structure + first characters), newest first, then go.
	LayerLibrary Layer = "context_library"
	// LayerMemory: Working blocks and non-essential attachments, highest
	// Priority number first (long Text blocks trimmed by whole lines with
	// ContextConfig.TrimTextBlocks).
	LayerMemory Layer = "memory"
)

// DefaultTruncationOrder is the order used when
// ContextConfig.TruncationOrder is nil: history gives way first, then
// recalled memories, then the library, then Working memory.
func DefaultTruncationOrder() []Layer {
	return []Layer{LayerHistory, LayerRecalled, LayerLibrary, LayerMemory}
}

// checkOrder validates a truncation order: each layer exactly once.
func checkOrder(order []Layer) error {
	if order == nil {
		return nil
	}
	all := DefaultTruncationOrder()
	if len(order) != len(all) {
		return fmt.Errorf("%w: truncation order %q must list each of %q once", ErrInvalid, order, all)
	}
	for _, l := range all {
		if !slices.Contains(order, l) {
			return fmt.Errorf("%w: truncation order %q must list each of %q once", ErrInvalid, order, all)
		}
	}
	return nil
}

// Defaults of the layer options.
const (
	DefaultRecallLimit         = 8
	DefaultRecallTokens        = 2_000
	DefaultLibraryTokens       = 8_000
	DefaultLibraryPreviewChars = 200
)

// RecallOptions turn on recalled memories: before each build the
// agent's archival entries most relevant to the current user message are
// retrieved, deduplicated against the blocks in the prompt, fitted to
// their own token budget and rendered as the recalled_memories section.
type RecallOptions struct {
	// Recaller retrieves candidates; nil means the store's archival search
	// (StoreRecaller) with Mode.
	Recaller Recaller
	// Mode of the default recaller's search (search.Auto: hybrid when the
	// store has an embedder, else full-text).
	Mode search.Mode
	// Limit is the number of candidates asked for (0: DefaultRecallLimit).
	Limit int
	// Tokens is the section's budget (0: DefaultRecallTokens).
	Tokens int
}

// Recaller retrieves an agent's memories relevant to a query, most
// relevant first.
type Recaller interface {
	Recall(ctx context.Context, a Agent, query string, limit int) ([]RecalledMemory, error)
}

// RecalledMemory is one recalled archival entry.
type RecalledMemory struct {
	ID      int64     `json:"id"`
	Content string    `json:"-"`
	Tags    []string  `json:"tags,omitempty"`
	Created time.Time `json:"created"`
	Score   float64   `json:"score"`
}

// StoreRecaller recalls archival entries through the agent's archival
// search (Agent.Archival).
type StoreRecaller struct {
	Mode search.Mode
}

// Recall runs an archival search for query. A query with nothing
// searchable in it (search.ErrInvalidQuery) recalls nothing.
func (r StoreRecaller) Recall(ctx context.Context, a Agent, query string, limit int) ([]RecalledMemory, error) {
	res, err := a.Archival().Search(ctx, query, search.NewOptions().Mode(r.Mode).Limit(limit))
	if errors.Is(err, search.ErrInvalidQuery) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]RecalledMemory, 0, len(res))
	for _, x := range res {
		out = append(out, RecalledMemory{ID: x.ID, Content: x.Content, Tags: x.Tags, Created: x.Created, Score: x.Score})
	}
	return out, nil
}

// LibraryOptions turn on the context library (seed 004's "previous context
// library"): artifacts given in earlier turns (WithTurnContext, then
// Promote) are kept in a section of the system prompt, and an artifact the
// current turn names again is sent as a short reference instead of in full.
type LibraryOptions struct {
	// Tokens is the library's budget (0: DefaultLibraryTokens). Artifacts
	// are laid out in first-seen order, each in full while it fits; a
	// recoverable one that does not fit becomes a preview, and one whose
	// preview does not fit either is left out. Non-recoverable artifacts
	// are always in full. An artifact's rendering depends only on the ones
	// before it, so a growing library keeps its prefix byte-identical.
	Tokens int
	// PreviewChars is the length of a preview (0: DefaultLibraryPreviewChars).
	PreviewChars int
}

// LibraryStore keeps the agent's context library; *memory.Agent
// implements it. It is an optional part of an Agent: New finds it on the
// agent by type assertion, and ContextConfig.Library and Promote over an
// agent without it fail with ErrInvalid rather than quietly doing nothing.
type LibraryStore interface {
	ContextLibrary(ctx context.Context) ([]memory.LibraryEntry, error)
	PutContextLibrary(ctx context.Context, entries []memory.LibraryEntry) error
}

// Artifact is a piece of context that belongs to one turn: a file, a
// snippet, a page. It goes into the current user message, not the system
// prompt, so the cacheable prefix survives; once promoted it joins the
// agent's context library.
type Artifact struct {
	// ID names the artifact (a path, a URL); the library deduplicates by it.
	ID      string `json:"id"`
	Kind    string `json:"kind,omitempty"`
	Title   string `json:"title,omitempty"`
	Content string `json:"-"`
	// Recoverable artifacts can be fetched again (a file, a URL): the
	// library may show only a preview of them. A pasted snippet is not.
	Recoverable bool `json:"recoverable,omitempty"`
}

// Environment is what the environment section says besides the date and
// time: the engram version, the tools offered, and what is set here.
type Environment struct {
	// Location is the time zone of the date and time shown; nil means UTC.
	Location *time.Location
	// WorkingDir and OS are shown when set.
	WorkingDir string
	OS         string
	// Version overrides the engram version (default: the module version
	// from the binary's build information, "(devel)" in a checkout).
	Version string
}

// WithEnvironment adds the environment section: the current date and time
// (from ContextConfig.Clock) in e.Location, the engram version, the number
// and names of the tools, and e's optional fields. It sits at the end of
// the system prompt, in the per-request part, so the time never breaks the
// cacheable prefix.
func (b Builder) WithEnvironment(e Environment) Builder {
	b.env = &e
	return b
}

// WithTurnContext adds artifacts to the current user message (an artifact
// with the ID of an earlier one replaces it in place). The current user
// message is the last user message given with WithCurrentMessage, else the
// last user message of the active batch (so every step of a tool loop
// puts the artifacts in the same place); Build fails without one. With
// ContextConfig.Library set, an artifact the library already shows in full
// with the same content is sent as a reference.
func (b Builder) WithTurnContext(arts ...Artifact) Builder {
	out := slices.Clone(b.turn)
	for _, a := range arts {
		out = replaceOrAppend(out, a, func(x Artifact) bool { return x.ID == a.ID })
	}
	b.turn = out
	return b
}

// WithRecallQuery sets the text memories are recalled for (default: the
// current user message).
func (b Builder) WithRecallQuery(q string) Builder {
	b.recallQuery, b.recallQuerySet = q, true
	return b
}

// Promote adds the artifacts of a built request's turn to the agent's
// context library (last write wins, first-seen position kept), so the next
// turn shows them in the library and refers to them. Call it once the turn
// is done; building again does not promote anything.
func (b Builder) Promote(ctx context.Context, req *Request) error {
	if req == nil || len(req.Artifacts) == 0 {
		return nil
	}
	ls := b.opt.library
	if ls == nil {
		return fmt.Errorf("%w: the agent keeps no context library", ErrInvalid)
	}
	if req.Metadata.Agent != b.agent {
		return fmt.Errorf("%w: promote artifacts of a request built for %q through a Builder of %q", ErrInvalid, req.Metadata.Agent, b.agent)
	}
	entries := make([]memory.LibraryEntry, len(req.Artifacts))
	for i, a := range req.Artifacts {
		entries[i] = memory.LibraryEntry{ID: a.ID, Kind: a.Kind, Title: a.Title, Content: a.Content, Recoverable: a.Recoverable}
	}
	if err := ls.PutContextLibrary(ctx, entries); err != nil {
		return fmt.Errorf("builder: promote %d artifacts of %q: %w", len(entries), req.Metadata.Agent, err)
	}
	return nil
}

// engramVersion is the module version from the build information.
func engramVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	const path = "github.com/engram-go/engram"
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return "(unknown)"
}

// renderEnvironment renders the environment section.
func renderEnvironment(e Environment, now time.Time, version string, tools []Tool) string {
	loc := e.Location
	if loc == nil {
		loc = time.UTC
	}
	now = now.In(loc)
	if e.Version != "" {
		version = e.Version
	}
	var b strings.Builder
	b.WriteString("<environment>\n")
	b.WriteString("Current date: " + now.Format("Monday, 2 January 2006") + "\n")
	b.WriteString("Current time: " + now.Format("15:04") + " (" + tzName(now) + ")\n")
	b.WriteString("engram version: ")
	writeEscaped(&b, version)
	b.WriteByte('\n')
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	b.WriteString("Tools (" + strconv.Itoa(len(tools)) + ")")
	if len(names) > 0 {
		b.WriteString(": ")
		writeEscaped(&b, strings.Join(names, ", "))
	}
	b.WriteByte('\n')
	if e.WorkingDir != "" {
		b.WriteString("Working directory: ")
		writeEscaped(&b, oneLine(e.WorkingDir))
		b.WriteByte('\n')
	}
	if e.OS != "" {
		b.WriteString("OS: ")
		writeEscaped(&b, oneLine(e.OS))
		b.WriteByte('\n')
	}
	b.WriteString("</environment>")
	return b.String()
}

// tzName is "CET, UTC+01:00" or "UTC".
func tzName(t time.Time) string {
	name, off := t.Zone()
	if off == 0 && (name == "UTC" || name == "") {
		return "UTC"
	}
	return name + ", UTC" + t.Format("-07:00")
}

// oneLine collapses control characters and line breaks into spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// recallIntro opens the recalled_memories section.
const recallIntro = "Archival memories that may bear on the current message, most relevant first. Cite one by its id; if one is out of date, record the correction as a new archival entry."

// renderMemory renders one recalled memory.
func renderMemory(b *strings.Builder, m RecalledMemory) {
	b.WriteString(`<memory id="`)
	b.WriteString(strconv.FormatInt(m.ID, 10))
	b.WriteByte('"')
	if !m.Created.IsZero() {
		b.WriteString(` created="`)
		b.WriteString(m.Created.UTC().Format("2006-01-02"))
		b.WriteByte('"')
	}
	if len(m.Tags) > 0 {
		b.WriteString(` tags="`)
		b.WriteString(escapeAttr(strings.Join(m.Tags, ",")))
		b.WriteByte('"')
	}
	b.WriteString(">\n")
	writeEscaped(b, strings.TrimSpace(m.Content))
	b.WriteString("\n</memory>")
}

// normalizeForDedup lower-cases s and collapses every run of non-letters
// and non-digits into one space, so "The kettle is on the shelf." and
// "the kettle  is on the shelf" compare equal.
func normalizeForDedup(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// artifactAttrs writes ` id="…" kind="…" title="…"`.
func artifactAttrs(b *strings.Builder, id, kind, title string) {
	b.WriteString(` id="`)
	b.WriteString(escapeAttr(id))
	b.WriteByte('"')
	if kind != "" {
		b.WriteString(` kind="`)
		b.WriteString(escapeAttr(kind))
		b.WriteByte('"')
	}
	if title != "" {
		b.WriteString(` title="`)
		b.WriteString(escapeAttr(title))
		b.WriteByte('"')
	}
}

// renderLibraryEntry renders a library artifact in full or as a preview.
func renderLibraryEntry(e memory.LibraryEntry, preview bool, previewChars int) string {
	var b strings.Builder
	b.Grow(len(e.Content) + len(e.ID) + 64)
	b.WriteString("<prior_context")
	artifactAttrs(&b, e.ID, e.Kind, e.Title)
	if preview {
		b.WriteString(` compacted="preview"`)
	}
	b.WriteString(">\n")
	if preview {
		writeEscaped(&b, artifactPreview(e.Content, previewChars))
	} else {
		writeEscaped(&b, e.Content)
	}
	b.WriteString("\n</prior_context>")
	return b.String()
}

// artifactPreview is the deterministic carry-forward form of an artifact:
// its size, its Markdown headings (up to 12) and its first characters cut
// at a word boundary.
func artifactPreview(content string, chars int) string {
	lines := strings.Count(content, "\n") + 1
	var heads []string
	for _, l := range strings.Split(content, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") && len(heads) < 12 {
			heads = append(heads, oneLine(t))
		}
	}
	s := "Structure: " + strconv.Itoa(lines) + " lines, " + strconv.Itoa(utf8.RuneCountInString(content)) + " chars"
	if len(heads) > 0 {
		s += "; headings: " + strings.Join(heads, " | ")
	}
	return s + "\nPreview: " + cutAtWord(content, chars)
}

// cutAtWord returns the first n runes of s (cut back to a space when one
// is near), with "…" when something was cut.
func cutAtWord(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := 0
	for i := range s {
		if n == 0 {
			cut = i
			break
		}
		n--
	}
	head := s[:cut]
	if i := strings.LastIndexByte(head, ' '); i > len(head)/2 {
		head = head[:i]
	}
	return head + "…"
}

// renderTurn is the current user message with this turn's artifacts:
// references to artifacts the library shows in full, then the new ones in
// file_context tags, then the user's text.
func renderTurn(refs []Artifact, full []Artifact, text string) string {
	var b strings.Builder
	if len(refs) > 0 {
		b.WriteString("<context_refs>\nAttached to this message and shown in the context library above:\n")
		for _, a := range refs {
			b.WriteString("- ")
			writeEscaped(&b, oneLine(a.ID))
			b.WriteByte('\n')
		}
		b.WriteString("</context_refs>")
	}
	for _, a := range full {
		if b.Len() > 0 {
			b.WriteString(sectionSeparator)
		}
		b.WriteString("<file_context")
		artifactAttrs(&b, a.ID, a.Kind, a.Title)
		b.WriteString(">\n")
		writeEscaped(&b, a.Content)
		b.WriteString("\n</file_context>")
	}
	if text != "" {
		b.WriteString(sectionSeparator)
		b.WriteString(text)
	}
	return b.String()
}
