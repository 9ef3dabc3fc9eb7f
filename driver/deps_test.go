package driver_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Package driver imports nothing of engram: an engine depends on it
// without depending on the store or the search index.
func TestDriverImportsNoEngramPackage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool:", err)
	}
	const self = "github.com/engram-go/engram/driver"
	out, err := exec.Command(goTool, "list", "-deps", self).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", self, err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/engram-go/engram") && dep != self {
			t.Errorf("%s imports %s", self, dep)
		}
	}
}

// userExtensions are the interfaces a user of the packages a program
// imports implements; every other interface is an engine's and belongs
// in package driver.
var userExtensions = map[string][]string{
	"search": {"Embedder", "FusionWeighter", "Reranker"},
	"memory": {"ConsolidationModel"},
}

// The packages a user imports export no engine interface: each exported
// interface type of search and memory is a user extension point.
func TestUserPackagesExportNoEngineInterface(t *testing.T) {
	for dir, allowed := range userExtensions {
		fset := token.NewFileSet()
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range af.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					if _, isIface := ts.Type.(*ast.InterfaceType); isIface && ts.Name.IsExported() && !slices.Contains(allowed, ts.Name.Name) {
						t.Errorf("%s exports interface %s (%s): an engine's interface belongs in package driver", dir, ts.Name.Name, fset.Position(ts.Pos()))
					}
				}
			}
		}
	}
}
