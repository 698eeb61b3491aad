package workflow

import (
	"errors"
	"fmt"
	"strings"
)

// Vars are the values ${{ … }} can name.
type Vars struct {
	Outputs  map[string]string   // setup outputs by `as`
	Env      func(string) string // env.NAME; nil: none is set
	Workflow string              // workflow.name
	Instance string              // workflow.instance
	Channel  string              // context.channel
	Document string              // context.document
}

// The reserved names, besides env.NAME.
var reserved = []string{"workflow.name", "workflow.instance", "context.channel", "context.document"}

// ErrUnknownVar is wrapped by the error for a ${{ name }} that names
// nothing.
var ErrUnknownVar = errors.New("workflow: unknown variable")

// ref is one ${{ … }} in a text.
type ref struct {
	start, end int    // text[start:end] is the whole ${{ … }}
	name       string // trimmed; "" when err is set
	err        string // a syntax error
}

// scan finds every ${{ … }} in text, in order.
func scan(text string) []ref {
	var refs []ref
	for i := 0; ; {
		j := strings.Index(text[i:], "${{")
		if j < 0 {
			return refs
		}
		start := i + j
		k := strings.Index(text[start+3:], "}}")
		if k < 0 {
			return append(refs, ref{start: start, end: len(text), err: `"${{" without "}}"`})
		}
		end := start + 3 + k + 2
		r := ref{start: start, end: end, name: strings.Trim(text[start+3:end-2], " \t")}
		if !validRefName(r.name) {
			r.err = fmt.Sprintf("%q is not a variable name (${{ NAME }}, ${{ env.NAME }}, ${{ workflow.name }} …)", text[start:end])
			r.name = ""
		}
		refs = append(refs, r)
		i = end
	}
}

// validRefName reports whether s is IDENT or IDENT.IDENT.
func validRefName(s string) bool {
	first, rest, dotted := strings.Cut(s, ".")
	return isIdent(first) && (!dotted || isIdent(rest))
}

// isIdent reports whether s is a letter or '_' followed by letters,
// digits, '_' and '-'.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// isEnvName reports whether s is an environment variable's name.
func isEnvName(s string) bool { return isIdent(s) && !strings.Contains(s, "-") }

// checkName reports what is wrong with a reference to name when the setup
// outputs are outputs ("" when nothing is).
func checkName(name string, outputs map[string]bool) string {
	if env, ok := strings.CutPrefix(name, "env."); ok {
		if !isEnvName(env) {
			return fmt.Sprintf("%q is not an environment variable's name", env)
		}
		return ""
	}
	for _, r := range reserved {
		if name == r {
			return ""
		}
	}
	if !strings.Contains(name, ".") && outputs[name] {
		return ""
	}
	return fmt.Sprintf("unknown variable %q: not a setup step's `as`, env.NAME, %s", name, strings.Join(reserved, ", "))
}

// Render replaces every ${{ name }} in text with its value, in one pass:
// a value containing ${{ is not expanded again. An unknown name, an unset
// or empty environment variable or a malformed ${{ is an error.
func Render(text string, v Vars) (string, error) {
	var b strings.Builder
	last := 0
	for _, r := range scan(text) {
		if r.err != "" {
			return "", fmt.Errorf("workflow: %s", r.err)
		}
		val, err := v.lookup(r.name)
		if err != nil {
			return "", err
		}
		b.WriteString(text[last:r.start])
		b.WriteString(val)
		last = r.end
	}
	b.WriteString(text[last:])
	return b.String(), nil
}

// lookup is the value of one name.
func (v Vars) lookup(name string) (string, error) {
	switch name {
	case "workflow.name":
		return v.Workflow, nil
	case "workflow.instance":
		return v.Instance, nil
	case "context.channel":
		return v.Channel, nil
	case "context.document":
		return v.Document, nil
	}
	if env, ok := strings.CutPrefix(name, "env."); ok {
		if !isEnvName(env) {
			return "", fmt.Errorf("%w: %q is not an environment variable's name", ErrUnknownVar, env)
		}
		val := ""
		if v.Env != nil {
			val = v.Env(env)
		}
		if val == "" {
			return "", fmt.Errorf("workflow: ${{ env.%s }}: %s is not set (or empty)", env, env)
		}
		return val, nil
	}
	if val, ok := v.Outputs[name]; ok && !strings.Contains(name, ".") {
		return val, nil
	}
	return "", fmt.Errorf("%w %q", ErrUnknownVar, name)
}
