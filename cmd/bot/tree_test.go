package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoCommandRegistersItself holds the command tree explicit: commandTree is the one place a
// command is added, so no file of the package (whatever its build tags) has an init function or a
// package-level variable holding commands (a registry an init or a var initializer would fill).
func TestNoCommandRegistersItself(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == "init" {
					t.Errorf("%s: func init(): add the command to commandTree (cli.go) instead", fset.Position(d.Pos()))
				}
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					if n := mentionsCommand(spec); n != nil {
						t.Errorf("%s: a package-level variable holds commands: build them in commandTree (cli.go)", fset.Position(n.Pos()))
					}
				}
			}
		}
	}
}

// mentionsCommand returns the first use of the command type under n: a type or a composite literal.
func mentionsCommand(n ast.Node) ast.Node {
	var found ast.Node
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == "command" && found == nil {
			found = id
		}
		return found == nil
	})
	return found
}

// The tree lists each command once, in the order --help prints it (by name), every leaf runs, and
// every parent has children and no action of its own.
func TestCommandTreeShape(t *testing.T) {
	var walk func(prefix string, cmds []*command)
	walk = func(prefix string, cmds []*command) {
		var names []string
		for _, c := range cmds {
			names = append(names, c.name)
			full := strings.TrimSpace(prefix + " " + c.name)
			switch {
			case c.name == "" || c.summary == "":
				t.Errorf("%q: a command needs a name and a summary", full)
			case len(c.children) > 0 && (c.run != nil || c.setFlags != nil):
				t.Errorf("%s: a parent command dispatches to its children; it has no flags or action", full)
			case len(c.children) == 0 && c.run == nil:
				t.Errorf("%s: a leaf command without an action", full)
			}
			walk(full, c.children)
		}
		if !slices.IsSorted(names) {
			t.Errorf("bot %s: commands not in name order: %v", prefix, names)
		}
		if len(slices.Compact(slices.Clone(names))) != len(names) {
			t.Errorf("bot %s: a name is given twice: %v", prefix, names)
		}
	}
	walk("", commandTree())
}

// Each app owns its flags' variables: a value parsed for one never shows in another's defaults.
func TestAppsDoNotShareFlags(t *testing.T) {
	getenv := func(string) string { return "" }
	first := newApp(nil, nil, getenv)
	second := newApp(nil, nil, getenv)
	for i := range first.commands {
		if first.commands[i] == second.commands[i] {
			t.Fatalf("bot %s: two apps share one command value", first.commands[i].name)
		}
	}
}
