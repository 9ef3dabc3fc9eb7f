// Package readme checks that every Go snippet in the repository's README
// compiles, so the tour a new user copies from cannot drift from the API,
// and that every test its Markdown cites as evidence exists.
package readme

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// snippet is one ```go block of the README.
type snippet struct {
	line int
	code string
}

func snippets(t *testing.T, readme string) []snippet {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	var out []snippet
	var cur *snippet
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```go":
			cur = &snippet{line: i + 2}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += l + "\n"
		}
	}
	return out
}

// free are the names a fragment may use without declaring them, as a
// reader would have them in scope.
var free = map[string]string{
	"ctx":  "context.Context",
	"path": "string",
}

// packages a fragment may use, by name.
var packages = map[string]string{
	"context":   "context",
	"errors":    "errors",
	"fmt":       "fmt",
	"os":        "os",
	"time":      "time",
	"blocks":    "github.com/engram-go/engram/blocks",
	"builder":   "github.com/engram-go/engram/builder",
	"compress":  "github.com/engram-go/engram/compress",
	"memory":    "github.com/engram-go/engram/memory",
	"schema":    "github.com/engram-go/engram/schema",
	"search":    "github.com/engram-go/engram/search",
	"toolrules": "github.com/engram-go/engram/toolrules",
	"tools":     "github.com/engram-go/engram/tools",
	"workspace": "github.com/engram-go/engram/workspace",
}

var pkgUse = regexp.MustCompile(`\b([a-z]+)\.[A-Z]`)

// program wraps a fragment into a compilable file: a function with the
// free names as parameters, the packages it names imported, and every
// variable it declares used (a tour does not use all of its results).
func program(t *testing.T, s snippet) string {
	t.Helper()
	if strings.HasPrefix(strings.TrimSpace(s.code), "package ") {
		return s.code
	}
	var imports []string
	seen := map[string]bool{}
	code := regexp.MustCompile(`//.*`).ReplaceAllString(s.code, "") // comments name packages too
	for _, m := range pkgUse.FindAllStringSubmatch(code, -1) {
		if p, ok := packages[m[1]]; ok && !seen[p] {
			seen[p] = true
			imports = append(imports, fmt.Sprintf("%q", p))
		}
	}
	if !seen["context"] {
		imports = append(imports, `"context"`)
	}
	sort.Strings(imports)
	declared := uses(t, s)
	var params, blank []string
	for name, typ := range free {
		if !declared[name] {
			params = append(params, name+" "+typ)
			blank = append(blank, "_ = "+name)
		}
	}
	sort.Strings(params)
	sort.Strings(blank)
	var used []string
	for name := range declared {
		used = append(used, "_ = "+name)
	}
	sort.Strings(used)
	// The fragment starts on the line after "func snippet(...) {", so
	// compiler positions map back to README lines.
	return fmt.Sprintf("package main\n\nimport (\n%s\n)\n\nfunc main() {}\n\nfunc snippet(%s) { %s\n%s%s\n}\n",
		strings.Join(imports, "\n"), strings.Join(params, ", "), strings.Join(blank, "; "), s.code, strings.Join(used, "\n"))
}

// uses returns the names the fragment declares with := at its top level.
func uses(t *testing.T, s snippet) map[string]bool {
	t.Helper()
	src := "package p\nfunc f() {\n" + s.code + "\n}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "snippet.go", src, 0)
	if err != nil {
		t.Fatalf("README line %d: the snippet does not parse: %v", s.line, err)
	}
	out := map[string]bool{}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		as, ok := st.(*ast.AssignStmt)
		if !ok || as.Tok != token.DEFINE {
			continue
		}
		for _, l := range as.Lhs {
			if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
				out[id.Name] = true
			}
		}
	}
	return out
}

// headerLines is how many lines program puts before a fragment.
func headerLines(prog string, s snippet) int {
	i := strings.Index(prog, s.code)
	if i < 0 {
		return 0
	}
	return strings.Count(prog[:i], "\n")
}

func TestReadmeSnippetsCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ss := snippets(t, filepath.Join(root, "README.md"))
	if len(ss) == 0 {
		t.Fatal("the README has no Go snippets")
	}
	// Inside the module, so its packages resolve; removed afterwards.
	dir, err := os.MkdirTemp(filepath.Join(root, "internal", "readme"), "snippets-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	offsets := make([]int, len(ss))
	for i, s := range ss {
		sub := filepath.Join(dir, fmt.Sprintf("s%d", i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		prog := program(t, s)
		offsets[i] = s.line - 1 - headerLines(prog, s)
		if err := os.WriteFile(filepath.Join(sub, "main.go"), []byte(prog), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "vet", "./"+filepath.Base(dir)+"/...")
	cmd.Dir = filepath.Join(root, "internal", "readme")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := out.String()
		pos := regexp.MustCompile(`s(\d+)/main\.go:(\d+)`)
		msg = pos.ReplaceAllStringFunc(msg, func(m string) string {
			p := pos.FindStringSubmatch(m)
			var i, l int
			fmt.Sscan(p[1], &i)
			fmt.Sscan(p[2], &l)
			return fmt.Sprintf("README.md:%d", l+offsets[i])
		})
		t.Fatalf("README snippets do not compile:\n%s", msg)
	}
}

// testName is a test, benchmark or fuzz target as prose cites it.
var testName = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)

// testFunc is the declaration of one.
var testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)\(`)

// TestReadmeTestNamesExist checks that every test, benchmark and fuzz
// target the repository's Markdown files cite as evidence is declared in
// some _test.go file: a renamed or removed test otherwise leaves a claim
// pointing at nothing (the README once cited TestVectorCacheMatchesVec0
// long after it had become TestVectorCacheMatchesSQL).
func TestReadmeTestNamesExist(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	cited := map[string][]string{} // name -> files citing it
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// Hidden directories, test data (npm packages bring their own
			// Markdown) and the snippet directories TestReadmeSnippetsCompile
			// makes are not the project's prose or tests.
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || strings.HasPrefix(name, "snippets-")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(name, "_test.go"):
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range testFunc.FindAllSubmatch(data, -1) {
				declared[string(m[1])] = true
			}
		case strings.HasSuffix(name, ".md"):
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			for _, n := range testName.FindAllString(string(data), -1) {
				cited[n] = append(cited[n], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(declared) == 0 || len(cited) == 0 {
		t.Fatalf("found %d declared and %d cited test names: the walk missed the repository", len(declared), len(cited))
	}
	var missing []string
	for n, files := range cited {
		if !declared[n] {
			slices.Sort(files)
			missing = append(missing, fmt.Sprintf("%s (cited in %s)", n, strings.Join(slices.Compact(files), ", ")))
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("no such test: %s", m)
	}
}
