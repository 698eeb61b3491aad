package bridge

import (
	"encoding/json"
	"errors"
	"io/fs"
	"strconv"
	"strings"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Kinds of the files of a claims folder.
const (
	fileClaim = "claim"
	fileToken = "reply token"
	fileSeen  = "seen file"
)

// claimFile is a parsed claims folder file name.
type claimFile struct {
	id   string // the message id
	kind string // fileClaim, fileToken or fileSeen
	gen  int    // the claim generation or token number
}

// maxClaimGen bounds the generations and tokens a name may have (the
// claim package stops at 1000).
const maxClaimGen = 1000

// parseClaimFile accepts exactly the names package claim and delivery
// give the files of a claims folder: M.json, M.N.json, M.reply,
// M.reply.N and M.seen, M a message id (name bytes, no '.'), N a decimal
// from 1 with no leading zero. Nothing else, so no separator, "..", or
// other file is ever named.
func parseClaimFile(name string) (claimFile, error) {
	bad := func(why string) (claimFile, error) {
		return claimFile{}, Errorf(CodeInvalid, "claimfs: name %.80q: %s", name, why)
	}
	id, rest, _ := strings.Cut(name, ".")
	if id == "" || len(id) > 200 || id[0] == '-' {
		return bad("not a message id")
	}
	for i := 0; i < len(id); i++ {
		if !tree.NameByte(id[i]) {
			return bad("not a message id")
		}
	}
	gen := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 1 && n < maxClaimGen && strconv.Itoa(n) == s
	}
	switch {
	case rest == "json":
		return claimFile{id, fileClaim, 0}, nil
	case rest == "reply":
		return claimFile{id, fileToken, 0}, nil
	case rest == "seen":
		return claimFile{id, fileSeen, 0}, nil
	case strings.HasSuffix(rest, ".json"):
		if n, ok := gen(strings.TrimSuffix(rest, ".json")); ok {
			return claimFile{id, fileClaim, n}, nil
		}
	case strings.HasPrefix(rest, "reply."):
		if n, ok := gen(strings.TrimPrefix(rest, "reply.")); ok {
			return claimFile{id, fileToken, n}, nil
		}
	}
	return bad("not a file of a claims folder")
}

// verifyClaimFile requires that data is a file f of agent's claims folder
// of channel, signed by agent and Verified.
func verifyClaimFile(v *signing.Verifier, channel, agent string, f claimFile, data []byte) error {
	var verdict signing.Verdict
	switch f.kind {
	case fileClaim:
		var c claim.Claim
		if err := json.Unmarshal(data, &c); err != nil {
			return Errorf(CodeInvalid, "claimfs: %s %s: %v", f.kind, f.id, err)
		}
		if c.Message != f.id || c.Channel != channel {
			return Errorf(CodeForbidden, "claimfs: the claim is of %s/%s, not %s/%s", c.Channel, c.Message, channel, f.id)
		}
		verdict = c.Verify(v, channel, agent, f.id, f.gen)
	case fileToken:
		var t claim.Token
		if err := json.Unmarshal(data, &t); err != nil || t.Reply == "" {
			return Errorf(CodeInvalid, "claimfs: %s %s: not a reply token", f.kind, f.id)
		}
		verdict = t.Verify(v, channel, agent, f.id, f.gen)
	case fileSeen:
		var s delivery.SeenFile
		if err := json.Unmarshal(data, &s); err != nil {
			return Errorf(CodeInvalid, "claimfs: %s %s: %v", f.kind, f.id, err)
		}
		if s.Message != f.id || s.Channel != channel || s.Agent != agent {
			return Errorf(CodeForbidden, "claimfs: the seen file is %s's of %s/%s, not %s's of %s/%s",
				s.Agent, s.Channel, s.Message, agent, channel, f.id)
		}
		verdict = s.Verify(v, channel, agent, f.id)
	}
	if verdict != signing.Verified {
		return Errorf(CodeForbidden, "claimfs: %s %s: %s's signature: %s", f.kind, f.id, agent, verdict)
	}
	return nil
}

// claimFS performs a claimfs request of agent (see [OpClaimFS]): with the
// safedir calls package claim makes, in ROOT/claims/CHANNEL/AGENT/ only.
func (s *Server) claimFS(agent string, data []byte) (any, error) {
	var req ClaimFSRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	if err := tree.CheckName("channel", req.Channel); err != nil {
		return nil, Errorf(CodeInvalid, "claimfs: %v", err)
	}
	f, err := parseClaimFile(req.Name)
	if err != nil {
		return nil, err
	}
	write := req.Op == ClaimFSPublish || req.Op == ClaimFSReplace
	switch {
	case !write && req.Op != ClaimFSRead && req.Op != ClaimFSLstat:
		return nil, Errorf(CodeInvalid, "claimfs: unknown op %.40q", req.Op)
	case !write && len(req.Data) > 0:
		return nil, Errorf(CodeInvalid, "claimfs: %s takes no data", req.Op)
	case req.Op == ClaimFSReplace && f.kind != fileClaim:
		return nil, Errorf(CodeForbidden, "claimfs: only a claim generation is ever replaced, not a %s", f.kind)
	case write && len(req.Data) == 0:
		return nil, Errorf(CodeInvalid, "claimfs: %s needs data", req.Op)
	case write && len(req.Data) > MaxClaimFile:
		return nil, Errorf(CodeInvalid, "claimfs: %d bytes: more than %d", len(req.Data), MaxClaimFile)
	case req.Limit < 0:
		return nil, Errorf(CodeInvalid, "claimfs: limit %d is negative", req.Limit)
	}
	if write {
		if err := verifyClaimFile(s.cfg.Verifier, req.Channel, agent, f, req.Data); err != nil {
			return nil, err
		}
	}
	what := "claimfs " + req.Op + " " + req.Name
	path := s.cfg.Root.AgentClaims(req.Channel, agent)
	open := safedir.Open
	if write {
		open = safedir.Create
	}
	d, err := open(path)
	if err != nil {
		return nil, classify(what, err)
	}
	defer d.Close()
	switch req.Op {
	case ClaimFSPublish:
		err = d.Publish(req.Name, req.Data, 0o666)
		if errors.Is(err, fs.ErrExist) {
			return nil, Errorf(CodeConflict, "%s: %v", what, err)
		}
	case ClaimFSReplace:
		err = d.Replace(req.Name, req.Data, 0o666)
	case ClaimFSRead:
		limit := req.Limit
		if limit == 0 || limit > MaxClaimFile {
			limit = MaxClaimFile
		}
		raw, fi, err := d.ReadFile(req.Name, limit)
		if err != nil {
			return nil, classify(what, err)
		}
		return ClaimFSReply{Reply: Reply{OK: true}, Data: raw, Size: fi.Size(), ModTime: fi.ModTime().UTC(), Mode: fi.Mode()}, nil
	case ClaimFSLstat:
		fi, err := d.Lstat(req.Name)
		if err != nil {
			return nil, classify(what, err)
		}
		return ClaimFSReply{Reply: Reply{OK: true}, Size: fi.Size(), ModTime: fi.ModTime().UTC(), Mode: fi.Mode()}, nil
	}
	if err != nil {
		return nil, classify(what, err)
	}
	if write {
		s.log.Debug("bridge: claimfs", "op", req.Op, "channel", req.Channel, "agent", agent, "file", req.Name)
	}
	return ClaimFSReply{Reply: Reply{OK: true}}, nil
}
