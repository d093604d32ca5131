package settings_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/settings"
)

// reads are the calls that read a variable: a getenv (os.Getenv, os.LookupEnv, a getenv
// parameter) or a flag of cmd/bot's envFlags, whose default a variable gives.
var reads = regexp.MustCompile(`^((?i:getenv|lookupenv)|String|Bool|Int|Float|Duration|List)$`)

// ours are the variables of pocbot's own settings (GITHUB_*, AWS_* and the like are the
// platform's, read where they are documented).
var ours = regexp.MustCompile(`^(POC|SCW)_[A-Z0-9_]+$`)

// TestSettingsAreReadThroughTheTable holds "one definition for one fact" for settings: no
// production file outside this package reads a variable of the table, or any POC_ or SCW_
// variable, by its name (a getenv, os.Getenv, a CLI flag whose default a variable gives): each is
// read through the table (settings.Env, the CLI's envFlags.Setting), so that its default and its
// grammar are the table's. A name given as a constant (statestore.EnvStateURL) counts as the name.
func TestSettingsAreReadThroughTheTable(t *testing.T) {
	root := filepath.Join("..", "..")
	table := map[string]bool{}
	for _, s := range settings.Table {
		if s.Env != "" {
			table[s.Env] = true
		}
	}
	isOurs := func(v string) bool { return table[v] || ours.MatchString(v) }
	files := productionFiles(t, root)
	// Constants holding a variable's name, by their name: a call may name the variable through one.
	consts := map[string]string{}
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if v, ok := stringLit(vs.Values[i]); ok && isOurs(v) {
							consts[id.Name] = v
						}
					}
				}
			}
			return true
		})
	}
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !reads.MatchString(lastName(call.Fun)) {
				return true
			}
			for _, arg := range call.Args {
				v, ok := stringLit(arg)
				if !ok {
					v, ok = consts[lastName(arg)]
				}
				if ok && isOurs(v) {
					t.Errorf("%s: %s is named in a call to %s: read it through the settings table (settings.Env, envFlags.Setting), adding its row if it has none",
						f.fset.Position(arg.Pos()), v, exprString(call.Fun))
				}
			}
			return true
		})
	}
}

type goFile struct {
	fset *token.FileSet
	file *ast.File
}

// productionFiles parses the module's Go files but tests, this package (the table itself) and
// the emulated world's (internal/sim: the stand-ins set the bot's variables, they are not the bot).
func productionFiles(t *testing.T, root string) []goFile {
	t.Helper()
	fset := token.NewFileSet()
	var out []goFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel != "." && strings.HasPrefix(d.Name(), "."), d.Name() == "testdata", rel == "internal/settings", rel == "internal/sim":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		out = append(out, goFile{fset, f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("only %d files under %s: not the module's root", len(out), root)
	}
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// lastName is the name an identifier or a selector ends with (Getenv of os.Getenv).
func lastName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return "a function"
}
