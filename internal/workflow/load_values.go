package workflow

// The readers of a workflow file's values: each reports what is wrong
// with a value at its position (loader.errorf).

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

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
