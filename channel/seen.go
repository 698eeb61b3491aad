package channel

import (
	"strconv"
	"strings"
	"time"
)

// seenSet is the set of names a Reader has returned (or marked), kept
// compact for channels of 100,000 messages and more: a message name
// msg-YYYYMMDD-HHMMSS-AGENT-HEX4.json is held as its digits, its hex part
// and an index into a table of agents (16 bytes), exactly, so a lookup
// needs neither an allocation nor a time parse. Other names (not of that
// shape) are held as strings.
type seenSet struct {
	keys    map[nameKey]struct{}
	other   map[string]struct{}
	agents  []string
	agentIx map[string]uint32
}

// nameKey is a message name in 16 bytes. stamp is YYYYMMDDHHMMSS read as a
// decimal number, which orders as the time does.
type nameKey struct {
	stamp uint64
	hex   [4]byte
	agent uint32
}

func newSeenSet(n int) *seenSet {
	return &seenSet{keys: make(map[nameKey]struct{}, n), other: make(map[string]struct{}), agentIx: make(map[string]uint32)}
}

// split cuts a name of message shape into its stamp, agent and hex parts,
// without checking more than the shape (ParseName judges validity).
func split(name string) (stamp uint64, agent, hex string, ok bool) {
	s, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return 0, "", "", false
	}
	if s, ok = strings.CutSuffix(s, nameSuffix); !ok {
		return 0, "", "", false
	}
	// YYYYMMDD-HHMMSS-A-HHHH at the least.
	if len(s) < len(nameTime)+1+1+1+4 || s[8] != '-' || s[len(nameTime)] != '-' || s[len(s)-5] != '-' {
		return 0, "", "", false
	}
	for i := 0; i < len(nameTime); i++ {
		if i == 8 {
			continue
		}
		c := s[i]
		if c < '0' || c > '9' {
			return 0, "", "", false
		}
		stamp = stamp*10 + uint64(c-'0')
	}
	return stamp, s[len(nameTime)+1 : len(s)-5], s[len(s)-4:], true
}

// key returns the key of name, adding its agent to the table if add.
func (s *seenSet) key(name string, add bool) (nameKey, bool) {
	stamp, agent, hex, ok := split(name)
	if !ok {
		return nameKey{}, false
	}
	ix, ok := s.agentIx[agent]
	if !ok {
		if !add {
			return nameKey{}, false
		}
		ix = uint32(len(s.agents))
		agent = strings.Clone(agent) // not a piece of a listing's name
		s.agents = append(s.agents, agent)
		s.agentIx[agent] = ix
	}
	k := nameKey{stamp: stamp, agent: ix}
	copy(k.hex[:], hex)
	return k, true
}

func (s *seenSet) has(name string) bool {
	if k, ok := s.key(name, false); ok {
		_, ok := s.keys[k]
		return ok
	}
	_, ok := s.other[name]
	return ok
}

func (s *seenSet) add(name string) {
	if k, ok := s.key(name, true); ok {
		s.keys[k] = struct{}{}
		return
	}
	s.other[strings.Clone(name)] = struct{}{}
}

// namesFrom returns the message names held whose name time is at or after
// floor, unsorted.
func (s *seenSet) namesFrom(floor time.Time) []string {
	min := stampOf(floor)
	var out []string
	for k := range s.keys {
		if k.stamp >= min {
			out = append(out, k.name(s.agents))
		}
	}
	return out
}

// stampOf is t (UTC, to the second) as YYYYMMDDHHMMSS.
func stampOf(t time.Time) uint64 {
	n, _ := strconv.ParseUint(t.UTC().Format("20060102150405"), 10, 64)
	return n
}

func (k nameKey) name(agents []string) string {
	d := strconv.FormatUint(k.stamp, 10)
	d = strings.Repeat("0", max(14-len(d), 0)) + d
	return namePrefix + d[:8] + "-" + d[8:] + "-" + agents[k.agent] + "-" + string(k.hex[:]) + nameSuffix
}
