package bridge

import (
	"io/fs"
	"time"
)

// OpClaimFS performs one operation of a claim.Dir (package claim) in the
// acting agent's claims folder of a channel, ROOT/claims/CHANNEL/AGENT/:
// a remote watcher's claims are decided on the mount, by the same
// no-replace publishes as a mounted watcher's.
const OpClaimFS = "claimfs"

// Operations of a [ClaimFSRequest].
const (
	ClaimFSPublish = "publish" // create Name with Data; never replaces: conflict when taken
	ClaimFSReplace = "replace" // replace claim generation Name with Data
	ClaimFSRead    = "read"    // read Name, at most Limit bytes
	ClaimFSLstat   = "lstat"   // stat Name
)

// MaxClaimFile bounds a file a claimfs request writes or reads (the
// claim package reads no claim file larger).
const MaxClaimFile = 64 << 10

// ClaimFSRequest is one claimfs operation on the file Name of the acting
// agent's claims folder of Channel. Name is one of the folder's file
// names (M.json, M.N.json, M.reply, M.reply.N, M.seen: see package claim
// and delivery); Data is the file's content for publish and replace
// (JSON, base64 on the wire), signed by the agent; Limit bounds a read
// (0 or more than MaxClaimFile: MaxClaimFile).
type ClaimFSRequest struct {
	Channel string `json:"channel"`
	Op      string `json:"op"`
	Name    string `json:"name"`
	Data    []byte `json:"data,omitempty"`
	Limit   int64  `json:"limit,omitempty"`
}

// ClaimFSReply answers claimfs: for read and lstat the file's size,
// modification time and mode, and for read its content.
type ClaimFSReply struct {
	Reply
	Data    []byte      `json:"data,omitempty"`
	Size    int64       `json:"size,omitempty"`
	ModTime time.Time   `json:"mod_time,omitzero"`
	Mode    fs.FileMode `json:"mode,omitempty"`
}
