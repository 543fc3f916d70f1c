package condense

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function of the engine (condense and selective,
// tests aside), from its func line to its closing brace.
const maxFuncLines = 80

// longFuncs are the functions still allowed over maxFuncLines, by file
// and name, until they are split.
var longFuncs = map[string]bool{}

// TestFunctionLength fails when a function of the engine is longer than
// maxFuncLines and not in longFuncs, or when one in longFuncs no longer
// is (take it off the list).
func TestFunctionLength(t *testing.T) {
	seen := map[string]bool{}
	for _, dir := range []string{".", "../selective"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			for name, n := range funcLengths(t, path) {
				key := filepath.Base(path) + ":" + name
				if dir != "." {
					key = filepath.Join(filepath.Base(dir), key)
				}
				switch {
				case n > maxFuncLines && longFuncs[key]:
					seen[key] = true
				case n > maxFuncLines:
					t.Errorf("%s is %d lines, over %d: split it", key, n, maxFuncLines)
				}
			}
		}
	}
	for key := range longFuncs {
		if !seen[key] {
			t.Errorf("%s is no longer over %d lines (or gone): take it off longFuncs", key, maxFuncLines)
		}
	}
}

// funcLengths returns the length in lines of each function declared in
// the file at path, by name (a method's without its receiver).
func funcLengths(t *testing.T, path string) map[string]int {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			out[fd.Name.Name] = max(out[fd.Name.Name], fset.Position(fd.End()).Line-fset.Position(fd.Pos()).Line+1)
		}
	}
	return out
}
