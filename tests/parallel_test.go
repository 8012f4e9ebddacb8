package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestEveryTestParallel: every test of this package begins with
// t.Parallel(). The package's tests then share one pool of -parallel
// slots: a test left sequential would run alone, each of its parallel
// subtests waiting for the others, and the machine's second core would
// sit idle through its slowest one.
func TestEveryTestParallel(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	fset := token.NewFileSet()
	tests := 0
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isTest(fn) {
				continue
			}
			tests++
			if len(fn.Body.List) == 0 || !callsParallel(fn.Body.List[0]) {
				t.Errorf("%s: %s does not begin with t.Parallel()", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
	if tests < 2 {
		t.Fatalf("%d tests found in %v", tests, files)
	}
}

// isTest reports whether fn is a test: TestXxx(t *testing.T).
func isTest(fn *ast.FuncDecl) bool {
	name := fn.Name.Name
	if len(name) < 5 || name[:4] != "Test" || name == "TestMain" {
		return false
	}
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) != 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}

// callsParallel reports whether s is the statement t.Parallel().
func callsParallel(s ast.Stmt) bool {
	e, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := e.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Parallel"
}
