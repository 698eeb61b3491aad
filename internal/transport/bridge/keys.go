package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// The ops of a remote host's mirror (package remote, Mirror): the keyring
// it verifies with, and the kill requests of its own jobs.
//
//	keys   {} -> {"ok": true, "keys": {"AGENT.json": FILE, ...}, "more": bool}
//	kills  {"jobs": [JOB, ...]} -> {"ok": true, "kills": {JOB: KILL, ...}}
//
// keys returns the files of ROOT/keys (each AGENT.json a JSON object whose
// "agent" is AGENT; others are left out), at most [MaxKeyFiles] and within
// a reply; "more" says some were left out, so a mirror does not take the
// list as whole. A remote host trusts these keys because its NATS
// credentials trust the bridge (docs/remote.md, "Hosts without the mount").
//
// kills returns, for each of at most [MaxKillJobs] job ids of the acting
// agent, the kill request ROOT/state/AGENT/jobs/JOB.kill when there is one
// (as jobs.ReadKill decodes it; the requester's signature is checked by
// the mirror). Only the acting agent's own jobs can be asked about.
const (
	OpKeys  = "keys"
	OpKills = "kills"
)

// Bounds of the keys and kills ops.
const (
	MaxKeyFiles   = 1000
	MaxKeyFileLen = 256 << 10
	MaxKillJobs   = 100
)

// KeysRequest asks for the keyring's files.
type KeysRequest struct{}

// KeysReply answers keys: the files by name; More when some were left out.
type KeysReply struct {
	Reply
	Keys map[string]json.RawMessage `json:"keys"`
	More bool                       `json:"more"`
}

// KillsRequest asks for the kill requests of the acting agent's jobs.
type KillsRequest struct {
	Jobs []string `json:"jobs"`
}

// KillsReply answers kills: the kill file of each job that has one.
type KillsReply struct {
	Reply
	Kills map[string]json.RawMessage `json:"kills"`
}

// KeyFileAgent returns the agent whose keyring file data is, when name is
// AGENT.json and data a JSON object naming AGENT; else an error.
func KeyFileAgent(name string, data []byte) (string, error) {
	agent, ok := strings.CutSuffix(name, ".json")
	if !ok || !tree.ValidName(agent) {
		return "", fmt.Errorf("%w: key file %q", tree.ErrBadName, tree.Printable(name))
	}
	if len(data) > MaxKeyFileLen {
		return "", fmt.Errorf("key file %s: %d bytes", name, len(data))
	}
	var f struct {
		Agent string            `json:"agent"`
		Keys  []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return "", fmt.Errorf("key file %s: %w", name, err)
	}
	if f.Agent != agent {
		return "", fmt.Errorf("key file %s: names agent %q", name, tree.Printable(f.Agent))
	}
	return agent, nil
}

func (s *Server) keys(data []byte) (any, error) {
	var req KeysRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	out := KeysReply{Reply: Reply{OK: true}, Keys: map[string]json.RawMessage{}}
	size := replyRoom
	// Through the ring, so that a checked keyring is read from the folder
	// it checked, each file checked again (keyring.Ring.Files); a file
	// that fails is left out, and said so in the log.
	errFull := errors.New("full")
	err := s.cfg.Keyring.Files(MaxKeyFileLen, func(name string, b []byte) error {
		if len(out.Keys) >= MaxKeyFiles {
			out.More = true
			return errFull
		}
		if _, err := KeyFileAgent(name, b); err != nil {
			s.log.Warn("bridge: keys: left out", "err", err)
			return nil
		}
		buf, err := compact(b)
		if err != nil {
			return nil
		}
		if size+len(buf)+len(name)+8 > s.cfg.MaxReply {
			out.More = true
			return errFull
		}
		size += len(buf) + len(name) + 8
		out.Keys[name] = buf
		return nil
	}, func(name string, err error) {
		if errors.Is(err, keyring.ErrUnsafe) {
			s.log.Error("bridge: keys: left out a key file that fails the keyring's check", "file", name, "err", err)
		}
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, classify("keys", err)
	}
	return out, nil
}

// compact returns data as compact JSON, which a reply embeds.
func compact(data []byte) (json.RawMessage, error) {
	var v json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func (s *Server) kills(agent string, data []byte) (any, error) {
	var req KillsRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	if len(req.Jobs) > MaxKillJobs {
		return nil, Errorf(CodeInvalid, "kills: %d jobs, at most %d", len(req.Jobs), MaxKillJobs)
	}
	out := KillsReply{Reply: Reply{OK: true}, Kills: map[string]json.RawMessage{}}
	for _, job := range req.Jobs {
		k, err := jobs.ReadKill(s.cfg.Root, agent, job)
		switch {
		case errors.Is(err, tree.ErrBadName):
			return nil, Errorf(CodeInvalid, "kills: %v", err)
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, classify("kills", err)
		}
		b, err := json.Marshal(k)
		if err != nil {
			return nil, classify("kills", err)
		}
		out.Kills[job] = b
	}
	return out, nil
}
