package workflow

// A workflow file's context: collab's own keys (channel, document) and
// seed 000's (false, provider, config: dir, channel, document,
// documents), both mapped onto the instance's channel and documents.

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/documents"
)

// Context providers.
const (
	ProviderFile   = "file"   // the tree: ROOT/channels/CHANNEL and ROOT/docs/CHANNEL
	ProviderMemory = "memory" // a private tree of the process, in memory, gone when it ends
)

// The seed's defaults of a file provider's config: the folder of the
// context and the channel's file in it. Either, given as it is, names the
// default channel (NAME--INSTANCE).
const (
	defaultDir         = ".workflow/${{ instance }}/"
	defaultChannelFile = "channel.md"
)

// dirVars are the variables a context.config.dir may name.
var dirVars = []string{"instance", "workflow.instance", "workflow.name"}

func (l *loader) context(e kv, c *Context) {
	switch v := e.value.(type) {
	case nil, *ast.NullNode:
		return
	case *ast.BoolNode:
		c.Off = !v.Value
		return
	}
	var cfg *kv
	for _, kv := range l.mapping(e.value, "context") {
		switch kv.key {
		case "channel":
			l.channelName(kv, "context.channel", &c.Channel)
		case "document":
			l.document(kv, "context.document", &c.Document)
		case "provider":
			c.Provider = l.oneOf(kv, []string{ProviderFile, ProviderMemory})
		case "config":
			cfg = &kv
		default:
			l.unknown(kv, "context", "channel", "document", "provider", "config")
		}
	}
	if cfg != nil {
		l.contextConfig(*cfg, c)
	}
}

// contextConfig reads a provider's config: dir, channel, document,
// documents.
func (l *loader) contextConfig(e kv, c *Context) {
	if e.value == nil || isNull(e.value) {
		return
	}
	for _, kv := range l.mapping(e.value, "context.config") {
		switch kv.key {
		case "dir":
			s, ok := l.str(kv)
			if !ok {
				continue
			}
			if c.Provider == ProviderMemory {
				l.errorf(kv.at, "context.config.dir: a memory provider has no folder; leave dir out")
				continue
			}
			c.Dir = s
			if _, err := c.dirName("instance", "workflow"); err != nil {
				l.errorf(kv.value, "context.config.dir: %v", err)
			}
		case "channel":
			s, ok := l.str(kv)
			if !ok {
				continue
			}
			c.ChannelFile = s
			if _, err := c.fileName(); err != nil {
				l.errorf(kv.value, "context.config.channel: %v", err)
			}
		case "document":
			l.document(kv, "context.config.document", &c.Document)
		case "documents":
			for _, s := range l.strs(kv) {
				if err := documents.CheckPath(s); err != nil {
					l.errorf(kv.value, "context.config.documents: %v", err)
					continue
				}
				c.Documents = append(c.Documents, s)
			}
		default:
			l.unknown(kv, "context.config", "dir", "channel", "document", "documents")
		}
	}
	if c.Channel != "" && (c.Dir != "" || c.ChannelFile != "") {
		l.errorf(e.at, "context: both channel: and config's dir/channel name the channel; give one")
	}
}

// channelName reads a channel's name.
func (l *loader) channelName(e kv, what string, dst *string) {
	if s, ok := l.str(e); ok {
		if err := tree.CheckName("channel", s); err != nil {
			l.errorf(e.value, "%s: %v", what, err)
		}
		*dst = s
	}
}

// document reads a document's path.
func (l *loader) document(e kv, what string, dst *string) {
	if s, ok := l.str(e); ok {
		if err := documents.CheckPath(s); err != nil {
			l.errorf(e.value, "%s: %v", what, err)
		}
		*dst = s
	}
}

// dirName is the channel name context.config.dir gives for instance of
// workflow: its last element with ${{ instance }}, ${{ workflow.instance }}
// and ${{ workflow.name }} replaced; "" when dir is not set or is the
// seed's default.
func (c *Context) dirName(instance, workflow string) (string, error) {
	d := strings.TrimSpace(c.Dir)
	if d == "" || filepath.Clean(d) == filepath.Clean(defaultDir) || filepath.Clean(d) == ".workflow/${{ workflow.instance }}" {
		return "", nil
	}
	for _, r := range scan(d) {
		if r.err != "" {
			return "", errors.New(r.err)
		}
		if !slices.Contains(dirVars, r.name) {
			return "", fmt.Errorf("${{ %s }} is not one of ${{ instance }}, ${{ workflow.instance }}, ${{ workflow.name }}", r.name)
		}
	}
	s, err := Render(d, Vars{Outputs: map[string]string{"instance": instance}, Instance: instance, Workflow: workflow})
	if err != nil {
		return "", err
	}
	base := filepath.Base(filepath.Clean(s))
	if err := tree.CheckName("channel", base); err != nil {
		return "", fmt.Errorf("its last element %q does not make a channel name (letters, digits, '.', '_', '-')", base)
	}
	return base, nil
}

// fileName is the channel name context.config.channel gives: the file's
// name without its extension; "" when not set or the seed's default.
func (c *Context) fileName() (string, error) {
	f := c.ChannelFile
	if f == "" || f == defaultChannelFile {
		return "", nil
	}
	if strings.ContainsAny(f, "/\\") {
		return "", errors.New("a file name, not a path (the folder is dir:)")
	}
	stem := strings.TrimSuffix(f, filepath.Ext(f))
	if err := tree.CheckName("channel", stem); err != nil {
		return "", fmt.Errorf("%q does not make a channel name (letters, digits, '.', '_', '-' and an extension)", f)
	}
	return stem, nil
}
