package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// layer is one file ↔ block mapping.
type layer struct {
	path        string // relative, slash-separated
	label       string
	description string
	typ         blocks.Type
	perm        blocks.Permission
	pinned      bool
}

var fixed = []layer{
	{"SOUL.md", "persona", "Who the agent is (SOUL.md)", blocks.Core, blocks.ReadWrite, false},
	{"AGENTS.md", "guidelines", "How the agent works (AGENTS.md)", blocks.Core, blocks.ReadWrite, false},
	{"MEMORY.md", "memory", "Long-term notes (MEMORY.md)", blocks.Working, blocks.ReadWrite, true},
	{"TOOLS.md", "tools", "Tool notes (TOOLS.md)", blocks.Core, blocks.ReadOnly, false},
}

// skillPrefix starts the label of a skill's block: "skill." and the skill's
// directory name made a valid label (blocks.SuggestLabel). Stores written
// before labels were checked used "skill:", which Export still reads.
const skillPrefix = blocks.SkillLabelPrefix

const legacySkillPrefix = "skill:"

// Report says what Import or Export did, file by file.
type Report struct {
	Created []string // block labels
	Updated []string
	Skipped []string // files not present
	Written []string // files written by Export
}

// Import reads dir into the blocks of agent a. It reads only regular files inside
// dir: a symbolic link is followed only while it stays inside dir, a FIFO,
// device or socket is refused without being opened for a blocking read
// (ErrUnsafeFile), and a file longer than a block may be is refused
// (ErrTooLarge); each error names the file. Every file is read and
// checked before the first block is written: a refused file leaves every
// block as it was.
//
// A hard link is a regular file and is read: nothing on the file tells a
// link made to smuggle a file in from one made on purpose. Linux's
// fs.protected_hardlinks (on by default) lets a user link only files they
// own or may read and write, so such a link brings in nothing its maker
// could not read already; where it is off, import only directories whose
// writers you trust with every file you can read.
func Import(ctx context.Context, a *memory.Agent, dir string) (Report, error) {
	var rep Report
	// Every file is read and checked before any block is written: a
	// refused file (the fourth, say) leaves the blocks of the first three
	// as they were, not imported.
	files, skipped, err := read(ctx, dir)
	if err != nil {
		return rep, err
	}
	rep.Skipped = skipped
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		created, err := upsert(ctx, a, f.layer, f.text)
		if err != nil {
			return rep, fmt.Errorf("workspace: import %s into block %q: %w", f.path, f.label, err)
		}
		if created {
			rep.Created = append(rep.Created, f.label)
		} else {
			rep.Updated = append(rep.Updated, f.label)
		}
	}
	return rep, nil
}

// File is a workspace file Import would read, and the block it becomes.
type File struct {
	Path  string // relative to the workspace, slash-separated
	Label string
}

// Plan reads dir as Import does, refusing the same files with the same
// errors, and returns the files Import would read and their blocks, in
// Import's order, without writing anything.
func Plan(dir string) ([]File, error) {
	files, _, err := read(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	out := make([]File, len(files))
	for i, f := range files {
		out[i] = File{Path: f.path, Label: f.label}
	}
	return out, nil
}

// readLayer is a file read and checked for Import.
type readLayer struct {
	layer
	text string
}

// read reads and checks every file of dir that Import reads (see Import),
// returning them and the paths of those absent.
func read(ctx context.Context, dir string) (files []readLayer, skipped []string, err error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("workspace: import %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, nil, fmt.Errorf("%w: import %s: not a directory", ErrInvalidFile, dir)
	}
	// Every read goes through root, which refuses paths (and links) that
	// lead outside dir: W/SOUL.md -> /etc/passwd once put the password
	// file into a prompt.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("workspace: import %s: %w", dir, err)
	}
	defer root.Close()
	layers := append([]layer(nil), fixed...)
	skills, err := skillNames(root)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]string{}
	for _, name := range skills {
		label := blocks.SuggestLabel(skillPrefix + name)
		if other, clash := seen[label]; clash {
			return nil, nil, fmt.Errorf("%w: skills %q and %q would both be block %q; rename one directory (labels are %s)",
				ErrInvalidFile, other, name, label, blocks.LabelRule)
		}
		seen[label] = name
		layers = append(layers, layer{path: "skills/" + name + "/SKILL.md", label: label,
			description: "Skill " + name + " (skills/" + name + "/SKILL.md)", typ: blocks.Working, perm: blocks.ReadOnly})
	}
	for _, l := range layers {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		data, found, err := readFile(root, l.path)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			skipped = append(skipped, l.path)
			continue
		}
		if !utf8.Valid(data) {
			return nil, nil, fmt.Errorf("%w: %s is not UTF-8", ErrInvalidFile, l.path)
		}
		if utf8.RuneCount(data) > blocks.MaxCharLimit {
			return nil, nil, tooLarge(l.path)
		}
		text := string(data)
		if strings.HasPrefix(l.label, skillPrefix) {
			if d := skillDescription(text); d != "" {
				l.description = d
			}
		}
		files = append(files, readLayer{layer: l, text: text})
	}
	return files, skipped, nil
}

func charLimit(text string) int {
	return min(max(blocks.DefaultCharLimit, utf8.RuneCountInString(text)*2), max(blocks.MaxCharLimit, utf8.RuneCountInString(text)))
}

func upsert(ctx context.Context, a *memory.Agent, l layer, text string) (created bool, err error) {
	doc, err := a.Block(l.label).Doc(ctx)
	if errors.Is(err, memory.ErrNotFound) {
		_, err = a.CreateBlock(ctx, memory.BlockSpec{Label: l.label, Description: l.description, Type: l.typ,
			Schema: schema.Text{}, Permission: l.perm, Pinned: l.pinned, CharLimit: charLimit(text), Value: text})
		return err == nil, err
	}
	if err != nil {
		return false, err
	}
	if doc.Schema().Kind() != schema.KindText {
		return false, fmt.Errorf("%w: block exists with a %s schema", blocks.ErrWrongSchema, doc.Schema().Kind())
	}
	if doc.CharLimit() < utf8.RuneCountInString(text) {
		info := doc.Info()
		info.CharLimit = charLimit(text)
		if err := doc.SetInfo(info); err != nil {
			return false, err
		}
	}
	// The operator's files are the source of truth: write as the system,
	// diffed against the current text.
	if err := doc.SetText(text, blocks.System); err != nil {
		return false, err
	}
	return false, a.Block(l.label).Persist(ctx)
}

// Export writes the workspace blocks of agent a to dir (creating it, 0700). It
// writes only inside dir and never through a link: each file is written
// to a new temporary file (0600) beside it and renamed over it, so a
// symbolic link in its place is replaced, not followed, and a directory
// link leaving dir is an error (ErrUnsafeFile).
func Export(ctx context.Context, a *memory.Agent, dir string) (Report, error) {
	var rep Report
	metas, err := a.Blocks(ctx)
	if err != nil {
		return rep, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return rep, fmt.Errorf("workspace: export %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return rep, fmt.Errorf("workspace: export %s: %w", dir, err)
	}
	defer root.Close()
	byLabel := map[string]memory.BlockMeta{}
	for _, m := range metas {
		byLabel[m.Label] = m
	}
	out := append([]layer(nil), fixed...)
	for _, m := range metas {
		name, ok := strings.CutPrefix(m.Label, skillPrefix)
		if !ok {
			name, ok = strings.CutPrefix(m.Label, legacySkillPrefix)
		}
		if ok {
			if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
				return rep, fmt.Errorf("%w: skill block %q has no safe directory name", ErrInvalidFile, m.Label)
			}
			out = append(out, layer{path: "skills/" + name + "/SKILL.md", label: m.Label})
		}
	}
	for _, l := range out {
		m, ok := byLabel[l.label]
		if !ok {
			rep.Skipped = append(rep.Skipped, l.path)
			continue
		}
		doc, err := a.Block(l.label).Doc(ctx)
		if err != nil {
			return rep, err
		}
		text, err := doc.Text()
		if err != nil {
			return rep, fmt.Errorf("workspace: export block %q (%s): %w", m.Label, m.Schema.Kind(), err)
		}
		if err := writeFile(root, l.path, []byte(text)); err != nil {
			return rep, err
		}
		rep.Written = append(rep.Written, l.path)
	}
	return rep, nil
}

// skillDescription is a skill's one-line description: the description
// field of SKILL.md's front matter (the format of Anthropic's agent
// skills), else its first line of prose, cut to 200 characters.
func skillDescription(text string) string {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		for i, l := range lines[1:] {
			if strings.TrimSpace(l) == "---" {
				lines = lines[i+2:]
				break
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "description:"); ok {
				return cut(strings.Trim(strings.TrimSpace(v), `"'`))
			}
		}
	}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return cut(l)
		}
	}
	return ""
}

func cut(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[:199]) + "…"
	}
	return s
}
