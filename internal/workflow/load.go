package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/collabdev/collab/internal/agent/watchconf"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/documents"
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
	name string // the file as the caller named it, for positions
	dir  string // its folder, absolute
	src  []byte
	errs []error
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
		return nil, &Error{Pos: Pos{name, 1, 1}, Msg: "empty workflow file: it needs agents: and kickoff:"}
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
	if kickoff == nil || strings.TrimSpace(f.Kickoff) == "" {
		at := Pos{name, 1, 1}
		if kickoff != nil {
			at = l.pos(kickoff)
		}
		l.errs = append(l.errs, &Error{Pos: at, Msg: "no kickoff: the file needs kickoff: with the first message"})
	} else {
		l.checkRefs(kickoff, f.Kickoff, f.Setup)
	}
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	return f, nil
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

// plain refuses anchors, aliases and tags; nil when n is one.
func (l *loader) plain(n ast.Node) ast.Node {
	switch n.(type) {
	case *ast.AnchorNode, *ast.AliasNode:
		l.errorf(n, "anchors and aliases are not supported in a workflow file")
		return nil
	case *ast.TagNode:
		l.errorf(n, "tags are not supported in a workflow file")
		return nil
	}
	return n
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return ok
}

// mapping reads n as a mapping with string keys; what names it in errors.
func (l *loader) mapping(n ast.Node, what string) []kv {
	if n = l.plain(n); n == nil {
		return nil
	}
	var values []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	default:
		l.errorf(n, "%s must be a mapping of keys to values, not %s", what, kindOf(n))
		return nil
	}
	out := make([]kv, 0, len(values))
	for _, mv := range values {
		k := l.plain(mv.Key)
		if k == nil {
			continue
		}
		s, ok := k.(*ast.StringNode)
		if !ok {
			l.errorf(k, "a key of %s must be a name, not %s", what, kindOf(k))
			continue
		}
		v := mv.Value
		if v != nil {
			v = l.plain(v)
			if v == nil {
				continue
			}
		}
		out = append(out, kv{key: s.Value, at: k, value: v})
	}
	return out
}

// noneAt reports whether no key of m is key.
func (l *loader) noneAt(m []kv, key string) bool {
	for _, e := range m {
		if e.key == key {
			return false
		}
	}
	return true
}

func kindOf(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode:
		return "nothing"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	}
	return "a " + strings.ToLower(n.Type().String())
}

func (l *loader) unknown(e kv, where string, known ...string) {
	l.errorf(e.at, "unknown key %q in %s (known: %s)", e.key, where, strings.Join(known, ", "))
}

// str reads a string value: a string, or a number's or boolean's text.
// A null or absent value is "" (unset), ok false.
func (l *loader) str(e kv) (string, bool) {
	switch v := e.value.(type) {
	case nil, *ast.NullNode:
		return "", false
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, true
	}
	l.errorf(e.value, "%s must be a string, not %s", e.key, kindOf(e.value))
	return "", false
}

// strs reads a list of strings (or one string).
func (l *loader) strs(e kv) []string {
	seq, ok := e.value.(*ast.SequenceNode)
	if !ok {
		if s, ok := l.str(e); ok {
			return []string{s}
		}
		return nil
	}
	out := make([]string, 0, len(seq.Values))
	for _, v := range seq.Values {
		if v = l.plain(v); v == nil {
			continue
		}
		if s, ok := l.str(kv{key: e.key + " entry", at: e.at, value: v}); ok {
			out = append(out, s)
		} else if isNull(v) {
			l.errorf(v, "%s: an empty entry", e.key)
		}
	}
	return out
}

// integer reads a whole number at least lo.
func (l *loader) integer(e kv, lo int64) (int64, bool) {
	switch v := e.value.(type) {
	case nil, *ast.NullNode:
		return 0, false
	case *ast.IntegerNode:
		n, err := strconv.ParseInt(fmt.Sprint(v.Value), 10, 64)
		if err != nil {
			l.errorf(v, "%s: %s is too large", e.key, v.GetToken().Value)
			return 0, false
		}
		if n < lo {
			l.errorf(v, "%s: %d is less than %d", e.key, n, lo)
			return 0, false
		}
		return n, true
	}
	l.errorf(e.value, "%s must be a whole number, not %s", e.key, kindOf(e.value))
	return 0, false
}

func (l *loader) intPtr(e kv, lo int64) *int {
	n, ok := l.integer(e, lo)
	if !ok {
		return nil
	}
	if int64(int(n)) != n {
		l.errorf(e.value, "%s: %d is too large", e.key, n)
		return nil
	}
	i := int(n)
	return &i
}

func (l *loader) boolPtr(e kv) *bool {
	switch v := e.value.(type) {
	case nil, *ast.NullNode:
		return nil
	case *ast.BoolNode:
		b := v.Value
		return &b
	}
	l.errorf(e.value, "%s must be true or false, not %s", e.key, kindOf(e.value))
	return nil
}

// duration reads a positive duration such as 30s or 5m.
func (l *loader) duration(e kv) (time.Duration, bool) {
	s, ok := l.str(e)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		l.errorf(e.value, "%s: %q is not a positive duration (like 30s, 5m or 1h30m)", e.key, s)
		return 0, false
	}
	return d, true
}

func (l *loader) durationPtr(e kv) *time.Duration {
	d, ok := l.duration(e)
	if !ok {
		return nil
	}
	return &d
}

func (l *loader) oneOf(e kv, choices []string) string {
	s, ok := l.str(e)
	if !ok {
		return ""
	}
	for _, c := range choices {
		if s == c {
			return s
		}
	}
	l.errorf(e.value, "%s: %q is not one of %s", e.key, s, strings.Join(choices, ", "))
	return ""
}

// path reads a path relative to the workflow's folder, made absolute.
func (l *loader) path(e kv) string {
	s, ok := l.str(e)
	if !ok {
		return ""
	}
	if s == "" {
		l.errorf(e.value, "%s: an empty path", e.key)
		return ""
	}
	return l.abs(s)
}

func (l *loader) abs(s string) string {
	if filepath.IsAbs(s) {
		return filepath.Clean(s)
	}
	return filepath.Join(l.dir, s)
}

func (l *loader) context(e kv, c *Context) {
	if e.value == nil || isNull(e.value) {
		return
	}
	for _, kv := range l.mapping(e.value, "context") {
		switch kv.key {
		case "channel":
			if s, ok := l.str(kv); ok {
				if err := tree.CheckName("channel", s); err != nil {
					l.errorf(kv.value, "context.channel: %v", err)
				}
				c.Channel = s
			}
		case "document":
			if s, ok := l.str(kv); ok {
				if err := documents.CheckPath(s); err != nil {
					l.errorf(kv.value, "context.document: %v", err)
				}
				c.Document = s
			}
		default:
			l.unknown(kv, "context", "channel", "document")
		}
	}
}

// agentKeys are the keys of an agent, in the order the error lists them.
var agentKeys = []string{"cli", "cmd", "cli_args", "model", "session_scope", "session_ttl",
	"budget_usd", "budget_tokens", "max_turns", "system_prompt", "role", "memory", "context",
	"prompt_template", "workdir", "timeout", "post_errors", "max_hops", "rate", "pair_rate",
	"trust", "mcp"}

func (l *loader) agents(n ast.Node) []Agent {
	before := len(l.errs)
	m := l.mapping(n, "agents")
	if len(m) == 0 {
		if len(l.errs) == before {
			l.errorf(n, "agents: needs at least one agent")
		}
		return nil
	}
	out := make([]Agent, 0, len(m))
	for _, e := range m {
		a := Agent{Name: e.key, Pos: l.pos(e.at)}
		if err := CheckName("agent", e.key); err != nil {
			l.errorf(e.at, "agent %q: %v", e.key, err)
		}
		l.agent(e, &a)
		out = append(out, a)
	}
	return out
}

func (l *loader) agent(e kv, a *Agent) {
	where := fmt.Sprintf("agent %q", a.Name)
	var prompt *kv
	cliBad := false
	m := l.mapping(orEmpty(e.value), where)
	if m == nil && e.value != nil && !isNull(e.value) {
		return // not a mapping: reported
	}
	for _, kv := range m {
		switch kv.key {
		case "cli":
			a.CLI = l.oneOf(kv, clis)
			cliBad = a.CLI == "" && !isNull(kv.value)
		case "cmd":
			a.Cmd, _ = l.str(kv)
		case "cli_args":
			a.CLIArgs = l.strs(kv)
		case "model":
			a.Model, _ = l.str(kv)
		case "session_scope":
			a.SessionScope = l.oneOf(kv, sessionScopes)
		case "session_ttl":
			a.SessionTTL = l.durationPtr(kv)
		case "budget_usd":
			a.BudgetUSD = l.money(kv)
		case "budget_tokens":
			if n, ok := l.integer(kv, 0); ok {
				a.BudgetTokens = &n
			}
		case "max_turns":
			a.MaxTurns = l.intPtr(kv, 0)
		case "system_prompt", "role":
			if prompt != nil {
				l.errorf(kv.at, "%s: both %s and %s; give one", where, prompt.key, kv.key)
				continue
			}
			prompt = &kv
			a.SystemPrompt = l.systemPrompt(kv)
		case "memory":
			for _, s := range l.strs(kv) {
				a.Memory = append(a.Memory, l.abs(s))
			}
		case "context":
			a.Context = l.intPtr(kv, 0)
		case "prompt_template":
			a.PromptTemplate = l.path(kv)
			if a.PromptTemplate != "" {
				if _, err := os.Stat(a.PromptTemplate); err != nil {
					l.errorf(kv.value, "prompt_template: %s: %v", kv.value.GetToken().Value, pathErr(err))
				}
			}
		case "workdir":
			a.Workdir = l.path(kv)
		case "timeout":
			a.Timeout = l.durationPtr(kv)
		case "post_errors":
			a.PostErrors = l.boolPtr(kv)
		case "max_hops":
			a.MaxHops = l.intPtr(kv, -1<<31)
		case "rate":
			a.Rate = l.intPtr(kv, -1<<31)
		case "pair_rate":
			a.PairRate = l.intPtr(kv, -1<<31)
		case "trust":
			if s, ok := l.str(kv); ok {
				if _, err := signing.ParsePolicy(s); err != nil {
					l.errorf(kv.value, "%v", err)
				}
				a.Trust = s
			}
		case "mcp":
			a.MCP = l.boolPtr(kv)
		default:
			l.unknown(kv, where, agentKeys...)
		}
	}
	if watchconf.NeedsCmd(a.CLI, a.Cmd) && !cliBad {
		l.errorf(e.at, "%s: cli %s needs cmd: (the command line to run), or choose cli: claude, codex or gemini", where, "command")
	}
}

// orEmpty treats an agent without settings (`coder:`) as an empty mapping.
func orEmpty(n ast.Node) ast.Node {
	if n == nil || isNull(n) {
		return &ast.MappingNode{BaseNode: &ast.BaseNode{}}
	}
	return n
}

func (l *loader) money(e kv) *float64 {
	var f float64
	switch v := e.value.(type) {
	case nil, *ast.NullNode:
		return nil
	case *ast.FloatNode:
		f = v.Value
	case *ast.IntegerNode:
		var err error
		if f, err = strconv.ParseFloat(v.GetToken().Value, 64); err != nil {
			l.errorf(v, "%s: %v", e.key, err)
			return nil
		}
	default:
		l.errorf(e.value, "%s must be a number, not %s", e.key, kindOf(e.value))
		return nil
	}
	if f < 0 || f != f {
		l.errorf(e.value, "%s: %s is not an amount", e.key, e.value.GetToken().Value)
		return nil
	}
	return &f
}

// systemPrompt reads the value: a file name (one line without white space
// that has '/' or '.') is read, relative to the workflow's folder; other
// values are the text.
func (l *loader) systemPrompt(e kv) string {
	s, ok := l.str(e)
	if !ok || !isFileName(s) {
		return s
	}
	p := l.abs(s)
	fh, err := os.Open(p)
	if err != nil {
		l.errorf(e.value, "%s: %s: %v", e.key, s, pathErr(err))
		return ""
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxPromptSize+1))
	switch {
	case err != nil:
		l.errorf(e.value, "%s: read %s: %v", e.key, s, err)
		return ""
	case len(data) > MaxPromptSize:
		l.errorf(e.value, "%s: %s is larger than %d bytes", e.key, s, MaxPromptSize)
		return ""
	}
	return string(data)
}

// pathErr is err without its path, which the message names as written.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// isFileName reports whether a system_prompt value names a file.
func isFileName(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n") && strings.ContainsAny(s, "/.")
}

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
func (l *loader) checkRefs(n ast.Node, text string, steps []Step) {
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
