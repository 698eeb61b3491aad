package channel

import (
	"errors"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ErrNotMessageName is returned by ParseName for a name that is not a
// message file name.
var ErrNotMessageName = errors.New("channel: not a message file name")

const (
	namePrefix = "msg-"
	nameSuffix = ".json"
	nameTime   = "20060102-150405"
)

// Name is a parsed message file name: msg-YYYYMMDD-HHMMSS-AGENT-HEX4.json.
type Name struct {
	Time  time.Time // UTC, to the second
	Agent string
	Hex   string
}

// NewID returns the id of a message from agent at t with the given 4 hex
// digits; the file name is the id plus ".json".
func NewID(agent string, t time.Time, hex4 string) string {
	return namePrefix + t.UTC().Format(nameTime) + "-" + agent + "-" + hex4
}

// ID returns the message id the name stands for.
func (n Name) ID() string { return NewID(n.Agent, n.Time, n.Hex) }

// ParseName parses a message file name. The agent part may hold hyphens
// (qc-1): the hex part is what follows the last one.
func ParseName(file string) (Name, error) {
	s, ok := strings.CutPrefix(file, namePrefix)
	if !ok {
		return Name{}, ErrNotMessageName
	}
	if s, ok = strings.CutSuffix(s, nameSuffix); !ok {
		return Name{}, ErrNotMessageName
	}
	return parseID(s)
}

// ParseID parses a message id (a file name without ".json").
func ParseID(id string) (Name, error) {
	s, ok := strings.CutPrefix(id, namePrefix)
	if !ok {
		return Name{}, ErrNotMessageName
	}
	return parseID(s)
}

func parseID(s string) (Name, error) {
	// YYYYMMDD-HHMMSS-A-HHHH at the least.
	if len(s) < len(nameTime)+1+1+1+4 || s[len(nameTime)] != '-' {
		return Name{}, ErrNotMessageName
	}
	for i := 0; i < len(nameTime); i++ {
		if i != 8 && (s[i] < '0' || s[i] > '9') {
			return Name{}, ErrNotMessageName
		}
	}
	t, err := time.Parse(nameTime, s[:len(nameTime)])
	if err != nil {
		return Name{}, ErrNotMessageName
	}
	rest := s[len(nameTime)+1:]
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return Name{}, ErrNotMessageName
	}
	agent, hx := rest[:i], rest[i+1:]
	if len(hx) != 4 || !isHex(hx) || !tree.ValidName(agent) {
		return Name{}, ErrNotMessageName
	}
	return Name{Time: t, Agent: agent, Hex: hx}, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
