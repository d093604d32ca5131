package chart

import (
	"errors"
	"fmt"
	"strings"
	"text/template/parse"
)

// state is one execution: the output, the variables in scope, the include depth.
type state struct {
	e     *engine
	out   *strings.Builder
	vars  []variable
	depth int
	node  parse.Node // the node being evaluated, for errors
	tmpl  string
	// conds are the if and with conditions whose branch is running, outermost first, across
	// include and tpl: an error for an unsupported function names the values that led to it.
	conds []string
}

type variable struct {
	name  string
	value any
}

var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

// run executes the named template with dot, as {{template}} does: $ is dot.
func (s *state) run(name string, dot any) error {
	t, ok := s.e.trees[name]
	if !ok {
		return fmt.Errorf("template %q not defined", name)
	}

	if s.depth++; s.depth > maxIncludeDepth {
		return fmt.Errorf("template %q: rendering exceeded %d nested templates (recursion?)", name, maxIncludeDepth)
	}
	defer func() { s.depth-- }()

	saved, savedT := s.vars, s.tmpl
	s.vars, s.tmpl = []variable{{"$", dot}}, name

	err := s.walk(dot, t.Root)

	s.vars, s.tmpl = saved, savedT

	return err
}

func (s *state) errorf(format string, args ...any) error {
	return fmt.Errorf("template: %s: %s", s.location(), fmt.Sprintf(format, args...))
}

// callError is a function's or a method's error as text/template words it, wrapped.
func (s *state) callError(name string, err error) error {
	return fmt.Errorf("template: %s: error calling %s: %w", s.location(), name, err)
}

// location is the template, line and column being evaluated.
func (s *state) location() string {
	if s.node != nil {
		if t, ok := s.e.trees[s.tmpl]; ok {
			if l, _ := t.ErrorContext(s.node); l != "" {
				return l
			}
		}
	}

	return s.tmpl
}

func (s *state) push(name string, v any) { s.vars = append(s.vars, variable{name, v}) }

func (s *state) mark() int { return len(s.vars) }

func (s *state) pop(m int) { s.vars = s.vars[:m] }

func (s *state) setVar(name string, v any) error {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			s.vars[i].value = v

			return nil
		}
	}

	return s.errorf("undefined variable: %s", name)
}

func (s *state) varValue(name string) (any, error) {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i].value, nil
		}
	}

	return nil, s.errorf("undefined variable: %s", name)
}

func (s *state) walk(dot any, n parse.Node) error {
	s.node = n

	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if err := s.walk(dot, c); err != nil {
				return err
			}
		}

		return nil
	case *parse.TextNode:
		s.out.Write(n.Text)

		return nil
	case *parse.CommentNode:
		return nil
	case *parse.ActionNode:
		v, err := s.pipeline(dot, n.Pipe)
		if err != nil {
			return err
		}

		if len(n.Pipe.Decl) == 0 {
			s.out.WriteString(printable(v))
		}

		return nil
	case *parse.IfNode:
		return s.ifOrWith(dot, n.Pipe, n.List, n.ElseList, false)
	case *parse.WithNode:
		return s.ifOrWith(dot, n.Pipe, n.List, n.ElseList, true)
	case *parse.RangeNode:
		return s.rangeNode(dot, n)
	case *parse.TemplateNode:
		var arg any

		if n.Pipe != nil {
			v, err := s.pipeline(dot, n.Pipe)
			if err != nil {
				return err
			}

			arg = v
		}

		return s.run(n.Name, arg)
	case *parse.BreakNode:
		return errBreak
	case *parse.ContinueNode:
		return errContinue
	default:
		return s.errorf("unknown node %s", n)
	}
}

func (s *state) ifOrWith(dot any, pipe *parse.PipeNode, list, elseList *parse.ListNode, with bool) error {
	m := s.mark()
	defer s.pop(m)

	v, err := s.pipeline(dot, pipe)
	if err != nil {
		return err
	}

	c := s.conds
	defer func() { s.conds = c }()

	if truth(v) {
		kw := "if"
		if with {
			kw, dot = "with", v
		}

		s.conds = append(c[:len(c):len(c)], "{{"+kw+" "+pipe.String()+"}}")

		return s.walk(dot, list)
	}

	if elseList != nil {
		s.conds = append(c[:len(c):len(c)], "{{if not ("+pipe.String()+")}}")

		return s.walk(dot, elseList)
	}

	return nil
}

// sub is a state for include and tpl: a new output and variables, the same depth and
// conditions.
func (s *state) sub(e *engine, out *strings.Builder) *state {
	return &state{e: e, out: out, depth: s.depth, conds: s.conds}
}

func (s *state) rangeNode(dot any, n *parse.RangeNode) error {
	m := s.mark()
	defer s.pop(m)

	v, err := s.pipeline(dot, n.Pipe)
	if err != nil {
		return err
	}

	body := func(k, e any) error {
		mm := s.mark()
		defer s.pop(mm)

		switch len(n.Pipe.Decl) {
		case 1:
			s.push(n.Pipe.Decl[0].Ident[0], e)
		case 2:
			s.push(n.Pipe.Decl[0].Ident[0], k)
			s.push(n.Pipe.Decl[1].Ident[0], e)
		}

		err := s.walk(e, n.List)
		if errors.Is(err, errContinue) {
			return nil
		}

		return err
	}

	count := 0

	var loopErr error

	switch x := plainMap(v).(type) {
	case []any:
		for i, e := range x {
			count++
			if loopErr = body(i, e); loopErr != nil {
				break
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			count++
			if loopErr = body(k, x[k]); loopErr != nil {
				break
			}
		}
	case files:
		for _, k := range x.names() {
			count++
			if loopErr = body(k, string(x.all[k])); loopErr != nil {
				break
			}
		}
	case nil:
	default:
		n, ok := asInt(v)
		if !ok {
			return s.errorf("range can't iterate over %v", v)
		}

		for i := range n {
			count++
			if loopErr = body(i, i); loopErr != nil {
				break
			}
		}
	}

	if loopErr != nil && !errors.Is(loopErr, errBreak) {
		return loopErr
	}

	if count == 0 && n.ElseList != nil {
		return s.walk(dot, n.ElseList)
	}

	return nil
}

// pipeline evaluates a pipeline, declaring or assigning its variables.
func (s *state) pipeline(dot any, p *parse.PipeNode) (any, error) {
	if p == nil {
		return nil, nil
	}

	var (
		v     any
		final = missing
	)

	for _, c := range p.Cmds {
		r, err := s.command(dot, c, final)
		if err != nil {
			return nil, err
		}

		v, final = r, r
	}

	for _, d := range p.Decl {
		if p.IsAssign {
			if err := s.setVar(d.Ident[0], v); err != nil {
				return nil, err
			}
		} else {
			s.push(d.Ident[0], v)
		}
	}

	return v, nil
}

// missing marks "no piped value" (a piped nil is a value).
var missing any = struct{ missing bool }{true}

func (s *state) command(dot any, c *parse.CommandNode, final any) (any, error) {
	s.node = c

	switch n := c.Args[0].(type) {
	case *parse.FieldNode:
		return s.fieldChain(dot, dot, n.Ident, c.Args, final)
	case *parse.ChainNode:
		recv, err := s.arg(dot, n.Node)
		if err != nil {
			return nil, err
		}

		return s.fieldChain(dot, recv, n.Field, c.Args, final)
	case *parse.IdentifierNode:
		return s.call(dot, n.Ident, c.Args[1:], final)
	case *parse.VariableNode:
		v, err := s.varValue(n.Ident[0])
		if err != nil {
			return nil, err
		}

		if len(n.Ident) == 1 {
			if len(c.Args) > 1 || final != missing {
				return nil, s.errorf("can't give argument to non-function %s", n)
			}

			return v, nil
		}

		return s.fieldChain(dot, v, n.Ident[1:], c.Args, final)
	}

	if len(c.Args) > 1 || final != missing {
		return nil, s.errorf("can't give argument to non-function %s", c.Args[0])
	}

	return s.arg(dot, c.Args[0])
}

// arg evaluates one argument node.
func (s *state) arg(dot any, n parse.Node) (any, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.NilNode:
		return nil, nil
	case *parse.BoolNode:
		return n.True, nil
	case *parse.StringNode:
		return n.Text, nil
	case *parse.NumberNode:
		return number(n)
	case *parse.FieldNode:
		return s.fieldChain(dot, dot, n.Ident, nil, missing)
	case *parse.ChainNode:
		recv, err := s.arg(dot, n.Node)
		if err != nil {
			return nil, err
		}

		return s.fieldChain(dot, recv, n.Field, nil, missing)
	case *parse.VariableNode:
		v, err := s.varValue(n.Ident[0])
		if err != nil || len(n.Ident) == 1 {
			return v, err
		}

		return s.fieldChain(dot, v, n.Ident[1:], nil, missing)
	case *parse.PipeNode:
		m := s.mark()
		defer s.pop(m)

		return s.pipeline(dot, n)
	case *parse.IdentifierNode:
		return s.call(dot, n.Ident, nil, missing)
	default:
		return nil, s.errorf("can't evaluate %s", n)
	}
}

// number is a literal as text/template hands it to an interface parameter: float64 when it is
// written as one (a '.', an exponent), else int.
func number(n *parse.NumberNode) (any, error) {
	switch {
	case n.IsFloat && !strings.HasPrefix(n.Text, "0x") && strings.ContainsAny(n.Text, ".eEpP"):
		return n.Float64, nil
	case n.IsInt:
		return int(n.Int64), nil
	case n.IsFloat:
		return n.Float64, nil
	default:
		return nil, fmt.Errorf("number %s out of range", n.Text)
	}
}

// fieldChain follows .a.b.c from recv; the last may be a method taking the command's other
// arguments and the piped value.
func (s *state) fieldChain(dot, recv any, idents []string, args []parse.Node, final any) (any, error) {
	for i, id := range idents {
		last := i == len(idents)-1

		var (
			callArgs []any
			err      error
		)

		if last {
			callArgs, err = s.args(dot, args, final)
			if err != nil {
				return nil, err
			}
		}

		if recv, err = s.field(recv, id, callArgs, last && (len(args) > 1 || final != missing)); err != nil {
			return nil, err
		}
	}

	return recv, nil
}

// args evaluates a command's arguments after its first and appends the piped value.
func (s *state) args(dot any, args []parse.Node, final any) ([]any, error) {
	var out []any

	if len(args) > 1 {
		for _, a := range args[1:] {
			v, err := s.arg(dot, a)
			if err != nil {
				return nil, err
			}

			out = append(out, v)
		}
	}

	if final != missing {
		out = append(out, final)
	}

	return out, nil
}

func (s *state) field(recv any, name string, args []any, hasArgs bool) (any, error) {
	switch r := recv.(type) {
	case methoder:
		if m, ok := r.method(name); ok {
			v, err := m(args)
			if err != nil {
				return nil, s.callError(name, err)
			}

			return v, nil
		}

		if hasArgs {
			return nil, s.errorf("%s has no method %s", r.typeName(), name)
		}

		if v, ok := r.field(name); ok {
			return v, nil
		}

		return nil, s.errorf("can't evaluate field %s in type %s", name, r.typeName())
	case map[string]any:
		if hasArgs {
			return nil, s.errorf("%s is not a method but has arguments", name)
		}

		return r[name], nil
	case nil:
		return nil, s.errorf("nil pointer evaluating interface {}.%s", name)
	default:
		return nil, s.errorf("can't evaluate field %s in type %T", name, recv)
	}
}

// call calls the function name; and/or evaluate their arguments lazily, as Go's do.
func (s *state) call(dot any, name string, argNodes []parse.Node, final any) (any, error) {
	if name == "and" || name == "or" {
		return s.andOr(dot, name == "and", argNodes, final)
	}

	f, ok := funcs[name]
	if !ok {
		if _, known := knownFuncs()[name]; known {
			return nil, s.errorf("function %q is not supported by pocbot's chart renderer (see internal/chart)%s", name, s.reachedUnder())
		}

		return nil, s.errorf("function %q not defined", name)
	}

	var argv []any

	for _, a := range argNodes {
		v, err := s.arg(dot, a)
		if err != nil {
			return nil, err
		}

		argv = append(argv, v)
	}

	if final != missing {
		argv = append(argv, final)
	}

	v, err := f(s, argv)
	if err != nil {
		return nil, s.callError(name, err)
	}

	return v, nil
}

func (s *state) andOr(dot any, and bool, argNodes []parse.Node, final any) (any, error) {
	n := len(argNodes)
	if final != missing {
		n++
	}

	if n == 0 {
		return nil, s.errorf("wrong number of args: want at least 1 got 0")
	}

	var v any

	for i := range n {
		var err error

		if i < len(argNodes) {
			if v, err = s.arg(dot, argNodes[i]); err != nil {
				return nil, err
			}
		} else {
			v = final
		}

		if truth(v) != and {
			return v, nil
		}
	}

	return v, nil
}

// methoder is a value with methods and fields of its own (.Files, .Capabilities…).
type methoder interface {
	method(name string) (func(args []any) (any, error), bool)
	field(name string) (any, bool)
	typeName() string
}

// truth is text/template's: false, 0, nil and empty strings, lists and maps are false.
func truth(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case chartValues:
		return len(x) > 0
	case int:
		return x != 0
	case int64:
		return x != 0
	case float64:
		return x != 0
	default:
		return true
	}
}

// printable is what an action prints: nothing for nil (Helm removes "<no value>"), else fmt's.
func printable(v any) string {
	if v == nil {
		return ""
	}

	return fmt.Sprint(v)
}

func asInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case float64:
		if x == float64(int(x)) {
			return int(x), true
		}
	}

	return 0, false
}

// reachedUnder names the conditions an unsupported function was reached under, so that the
// error says which values to change.
func (s *state) reachedUnder() string {
	if len(s.conds) == 0 {
		return ""
	}

	return ", reached under " + strings.Join(s.conds, " ") + ": change the values these conditions read"
}
