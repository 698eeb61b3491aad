package workflow

// A workflow file's setup steps, and the references to them.

import (
	"bytes"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

func (l *loader) setup(n ast.Node) []Step {
	seq, ok := l.plain(n).(*ast.SequenceNode)
	if !ok {
		if n != nil && l.plain(n) != nil {
			l.errorf(n, "setup must be a list of steps (- shell: …), not %s", kindOf(n))
		}
		return nil
	}
	var out []Step
	seen := map[string]Pos{}
	for _, v := range seq.Values {
		st := Step{Pos: l.pos(v), Timeout: DefaultStepTimeout}
		if v = l.plain(v); v == nil {
			continue
		}
		m := l.mapping(v, "a setup step")
		if len(m) == 0 {
			if m != nil {
				l.errorf(v, "setup: a step without shell:")
			}
			continue
		}
		st.Pos = l.pos(m[0].at)
		hasShell := false
		for _, e := range m {
			switch e.key {
			case "shell":
				hasShell = true
				st.Shell, _ = l.str(e)
				if strings.TrimSpace(st.Shell) == "" {
					l.errorf(orNode(e.value, e.at), "setup: shell: an empty command")
				}
			case "as":
				s, ok := l.str(e)
				if !ok {
					continue
				}
				switch {
				case !isIdent(s):
					l.errorf(e.value, "setup: as: %q is not a variable name (a letter or '_', then letters, digits, '_' or '-')", s)
				case s == "env" || s == "workflow" || s == "context":
					l.errorf(e.value, "setup: as: %q is reserved", s)
				default:
					if p, dup := seen[s]; dup {
						l.errorf(e.value, "setup: as: %q is already the output of the step at %s", s, p)
					} else {
						seen[s] = l.pos(e.value)
					}
				}
				st.As = s
			case "timeout":
				if d, ok := l.duration(e); ok {
					st.Timeout = d
				}
			default:
				l.unknown(e, "a setup step", "shell", "as", "timeout")
			}
		}
		if !hasShell {
			l.errs = append(l.errs, &Error{Pos: st.Pos, Msg: "setup: a step without shell:"})
		}
		out = append(out, st)
	}
	return out
}

func orNode(n, alt ast.Node) ast.Node {
	if n == nil {
		return alt
	}
	return n
}

// checkRefs checks every ${{ … }} of the kickoff.
func (l *loader) checkRefs(n ast.Node, text string, steps []Step, contextOff bool) {
	outputs := map[string]bool{}
	for _, st := range steps {
		if st.As != "" {
			outputs[st.As] = true
		}
	}
	seen := map[string]int{}
	for _, r := range scan(text) {
		raw := text[r.start:r.end]
		nth := seen[raw]
		seen[raw]++
		msg := r.err
		if msg == "" {
			msg = checkName(r.name, outputs)
		}
		if msg == "" && contextOff && r.name == "context.document" {
			msg = "${{ context.document }}: the file has context: false, so no document"
		}
		if msg == "" {
			continue
		}
		l.errs = append(l.errs, &Error{Pos: l.locate(n, raw, nth), Msg: "kickoff: " + msg})
	}
}

// locate finds the nth occurrence of raw in the source from the line of
// node n on: where an expression of a scalar is in the file. A scalar
// whose source differs from its value there (escapes, folding) falls back
// to the node's position.
func (l *loader) locate(n ast.Node, raw string, nth int) Pos {
	at := l.pos(n)
	off := lineStart(l.src, at.Line)
	if off < 0 {
		return at
	}
	rest := l.src[off:]
	skipped := off
	for {
		i := bytes.Index(rest, []byte(raw))
		if i < 0 {
			return at
		}
		if nth == 0 {
			abs := skipped + i
			line := at.Line + bytes.Count(l.src[off:abs], []byte("\n"))
			ls := bytes.LastIndexByte(l.src[:abs], '\n') + 1
			return Pos{l.name, line, len([]rune(string(l.src[ls:abs]))) + 1}
		}
		nth--
		rest = rest[i+len(raw):]
		skipped += i + len(raw)
	}
}

// lineStart is the offset of line (from 1) in src; -1 past the end.
func lineStart(src []byte, line int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off
}
