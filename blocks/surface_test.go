package blocks_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// exportedSurface lists the package's exported top-level identifiers and
// the exported methods of *Document, read from its non-test sources.
func exportedSurface(t *testing.T) (idents, methods map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	idents, methods = map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					if d.Name.IsExported() {
						idents[d.Name.Name] = true
					}
					continue
				}
				recv := d.Recv.List[0].Type
				if st, ok := recv.(*ast.StarExpr); ok {
					recv = st.X
				}
				if id, ok := recv.(*ast.Ident); ok && id.Name == "Document" && d.Name.IsExported() {
					methods[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							idents[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								idents[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return idents, methods
}

// The store's seam (internal/blockseam) is not part of the package's
// surface, and a section is addressed one way (Document.Section), not by
// a twin of each operation.
func TestPublicSurfaceHasNoSeamAndNoSectionTwins(t *testing.T) {
	idents, methods := exportedSurface(t)
	for _, name := range []string{"Writer", "WriteRequest", "Replica", "Carried", "Merged", "Attributor", "Proposer"} {
		if idents[name] {
			t.Errorf("blocks exports %s, part of the store's seam (internal/blockseam)", name)
		}
	}
	for _, name := range []string{"Manage", "MarkPersisted"} {
		if methods[name] {
			t.Errorf("*Document has method %s, part of the store's seam (internal/blockseam)", name)
		}
	}
	for name := range methods {
		if strings.HasSuffix(name, "InSection") {
			t.Errorf("*Document has method %s: sections are addressed with Document.Section", name)
		}
	}
	if !methods["Section"] || !idents["Section"] {
		t.Error("Document.Section or the Section type is missing")
	}
}
