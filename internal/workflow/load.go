package workflow

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/collabdev/collab/internal/agent/watchconf"
)

// Limits of what Load reads.
const (
	MaxFileSize   = 1 << 20 // the workflow file
	MaxPromptSize = 1 << 20 // a system_prompt file
)

// The CLI adapters and session scopes `collab watch` knows: watchconf's,
// the one validator of a watcher's settings.
var (
	clis          = watchconf.CLIs
	sessionScopes = watchconf.SessionScopes
)

// Load reads, parses and validates the workflow file at path: everything
// that does not depend on the instance. Its errors are *Error values
// (several joined with errors.Join) whose Pos.File is path as given.
func Load(path string) (*File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	fh, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("workflow: read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{Pos: Pos{path, 1, 1}, Msg: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
	}
	return parse(path, abs, data)
}

// loader collects the problems of one file.
type loader struct {
	name  string // the file as the caller named it, for positions
	dir   string // its folder, absolute
	src   []byte
	errs  []error
	warns []string
}

// parse validates data, the content of the file name (absolute: abs).
func parse(name, abs string, data []byte) (*File, error) {
	l := &loader{name: name, dir: filepath.Dir(abs), src: data}
	f := &File{Path: abs, Dir: l.dir}
	ff, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, l.yamlError(err)
	}
	var body ast.Node
	for i, doc := range ff.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if _, ok := doc.Body.(*ast.CommentGroupNode); ok {
			continue
		}
		if body != nil {
			l.errorf(doc.Body, "a second YAML document (document %d); a workflow file holds one", i+1)
			break
		}
		body = doc.Body
	}
	if body == nil {
		return nil, &Error{Pos: Pos{name, 1, 1}, Msg: "empty workflow file: it needs agents:"}
	}
	top := l.mapping(body, "the workflow file")
	if top == nil {
		return nil, errors.Join(l.errs...)
	}
	var agents, setup, kickoff ast.Node
	for _, kv := range top {
		switch kv.key {
		case "name":
			if s, ok := l.str(kv); ok {
				f.Name = s
				if err := CheckName("workflow", s); err != nil {
					l.errorf(kv.value, "name: %v", err)
				}
			}
		case "context":
			l.context(kv, &f.Context)
		case "agents":
			agents = kv.value
		case "setup":
			setup = kv.value
		case "kickoff":
			kickoff = kv.value
			if s, ok := l.str(kv); ok {
				f.Kickoff = s
			}
		default:
			l.unknown(kv, "the workflow file", "name", "context", "agents", "setup", "kickoff")
		}
	}
	if f.Name == "" && l.noneAt(top, "name") {
		base := filepath.Base(abs)
		f.Name = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
		if err := CheckName("workflow", f.Name); err != nil {
			l.errs = append(l.errs, &Error{Pos: Pos{name, 1, 1}, Msg: fmt.Sprintf("the file's name does not make a workflow name (%v); add name:", err), Err: err})
		}
	}
	if agents == nil || isNull(agents) {
		l.errs = append(l.errs, &Error{Pos: Pos{name, 1, 1}, Msg: "no agents: the file needs agents: with at least one agent"})
	} else {
		f.Agents = l.agents(agents)
	}
	if setup != nil && !isNull(setup) {
		f.Setup = l.setup(setup)
	}
	switch {
	case kickoff == nil || isNull(kickoff):
		f.Kickoff = "" // none: the team waits for the first message (start)
	case strings.TrimSpace(f.Kickoff) == "":
		l.errorf(kickoff, "kickoff: an empty message; leave kickoff: out to start without one")
	default:
		l.checkRefs(kickoff, f.Kickoff, f.Setup, f.Context.Off)
	}
	if f.Context.Off {
		l.contextOff(f)
	}
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	f.Warnings = l.warns
	return f, nil
}

// contextOff gives every agent of a file with context: false no
// transcript in its prompt (context: 0); an agent's own context: count
// contradicts it.
func (l *loader) contextOff(f *File) {
	for i := range f.Agents {
		a := &f.Agents[i]
		if a.Context != nil && *a.Context != 0 {
			l.errs = append(l.errs, &Error{Pos: a.Pos, Msg: fmt.Sprintf("agent %q: context: %d, but the file has context: false (no shared context)", a.Name, *a.Context)})
			continue
		}
		zero := 0
		a.Context = &zero
	}
}

// yamlError turns a parse error into an *Error at its token.
func (l *loader) yamlError(err error) error {
	var ye interface {
		GetToken() *token.Token
		GetMessage() string
	}
	if errors.As(err, &ye) {
		return &Error{Pos: l.tokenPos(ye.GetToken()), Msg: ye.GetMessage(), Err: err}
	}
	return &Error{Pos: Pos{l.name, 1, 1}, Msg: err.Error(), Err: err}
}

func (l *loader) tokenPos(t *token.Token) Pos {
	if t == nil || t.Position == nil || t.Position.Line < 1 {
		return Pos{l.name, 1, 1}
	}
	return Pos{l.name, t.Position.Line, max(t.Position.Column, 1)}
}

func (l *loader) pos(n ast.Node) Pos {
	switch m := n.(type) {
	case nil:
		return Pos{l.name, 1, 1}
	case *ast.MappingNode:
		if len(m.Values) > 0 && !m.IsFlowStyle {
			return l.pos(m.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return l.pos(m.Key)
	}
	return l.tokenPos(n.GetToken())
}

func (l *loader) errorf(n ast.Node, format string, args ...any) {
	l.errs = append(l.errs, &Error{Pos: l.pos(n), Msg: fmt.Sprintf(format, args...)})
}

// kv is one key of a mapping.
type kv struct {
	key   string
	at    ast.Node // the key
	value ast.Node // nil when absent
}
