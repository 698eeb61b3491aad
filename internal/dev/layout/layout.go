// Package layout measures the source tree against the limits the project
// keeps (issue 24): cmd/collab is a thin front end (parse, one call into
// internal/service, print), so it stays small and its functions short;
// a library file is one concept a reader can hold.
//
// Its test fails when a limit is passed, except for the entries of its
// list of known debts, each with the size it had when it was listed: a
// listed file or function that grows fails too, and one that shrinks
// under the limit must leave the list.
package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The limits.
const (
	MaxCmdLines     = 3500 // non-blank non-test lines of cmd/collab
	MaxCmdFunc      = 80   // lines of a function in cmd/collab
	MaxLibraryFile  = 700  // non-blank lines of a non-test library file
	MaxLibraryFunc  = 100  // lines of a library function
	cmdDir          = "cmd/collab"
	developerTools  = "internal/dev/"
	testSupportTree = "internal/testsupport/"
)

// nonBlank counts the lines of src that are not blank: the measure of a
// file here (a function is measured from its first line to its last).
func nonBlank(src string) int {
	n := 0
	for line := range strings.Lines(src) {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n
}

// Size is the size of one file or function, in lines.
type Size struct {
	Name  string // path, or path:func for a function (Recv.Name for a method)
	Lines int
}

// Report is what Measure found.
type Report struct {
	CmdLines  int    // non-blank non-test lines of cmd/collab
	CmdFuncs  []Size // functions of cmd/collab over MaxCmdFunc
	LibFiles  []Size // library files over MaxLibraryFile
	LibFuncs  []Size // library functions over MaxLibraryFunc
	Longest   Size   // the longest function of cmd/collab
	CmdFiles  int
	Libraries int // non-test library files measured
}

// Measure reads every non-test .go file under root (the module's folder),
// leaving out the developer tools and the test support.
func Measure(root string) (Report, error) {
	var r Report
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") ||
			strings.HasPrefix(rel, developerTools) || strings.HasPrefix(rel, testSupportTree) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		lines := nonBlank(string(src))
		inCmd := filepath.ToSlash(filepath.Dir(rel)) == cmdDir
		if inCmd {
			r.CmdLines += lines
			r.CmdFiles++
		} else {
			r.Libraries++
			if lines > MaxLibraryFile {
				r.LibFiles = append(r.LibFiles, Size{rel, lines})
			}
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			s := Size{rel + ":" + funcName(fn), n}
			switch {
			case inCmd:
				if n > r.Longest.Lines {
					r.Longest = s
				}
				if n > MaxCmdFunc {
					r.CmdFuncs = append(r.CmdFuncs, s)
				}
			case n > MaxLibraryFunc:
				r.LibFuncs = append(r.LibFuncs, s)
			}
		}
		return nil
	})
	return r, err
}

// funcName is Name, or Recv.Name for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return fn.Name.Name
	}
}
