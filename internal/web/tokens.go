package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ErrNoToken is returned by Tokens.Remove for an unknown id (of kind
// errkind.NotFound).
var ErrNoToken = errors.New("web: no such token")

// tokenPrefix starts every long-lived token, so one is recognised in a
// log or a leaked file.
const tokenPrefix = "collab_"

// Tokens is the server's file of long-lived bearer tokens: JSON, mode
// 0600, on the server's host (not in the shared tree: only the server's
// account can add one). It holds each token's SHA-256, never the token.
// Two commands changing it at once may lose one change.
type Tokens struct{ Path string }

// Token kinds: a person's token reaches the page and /api/ as the person;
// an agent's reaches /mcp only, as the agent.
const (
	KindPerson = "person"
	KindAgent  = "agent"
)

// TokenRecord is one token as the file keeps it. A record without a kind
// (a file written before agent tokens) is a person's.
type TokenRecord struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind,omitempty"`
	Person  string    `json:"person,omitempty"`
	Agent   string    `json:"agent,omitempty"`
	Channel string    `json:"channel,omitempty"` // an agent token's channel; "": the request names it
	SHA256  string    `json:"sha256"`
	Created time.Time `json:"created"`
}

// IsAgent reports whether r is an agent's token.
func (r TokenRecord) IsAgent() bool { return r.Kind == KindAgent }

// Name is the person or agent the token acts as.
func (r TokenRecord) Name() string {
	if r.IsAgent() {
		return r.Agent
	}
	return r.Person
}

// KindName is the record's kind, person when the file gives none.
func (r TokenRecord) KindName() string {
	if r.IsAgent() {
		return KindAgent
	}
	return KindPerson
}

// Reach is where the token reaches, as `collab serve token ls` shows it:
// "-" for a person's (no channel), an agent's channel, or "*" for an
// agent's made without one (the URL names it).
func (r TokenRecord) Reach() string {
	switch {
	case !r.IsAgent():
		return "-"
	case r.Channel == "":
		return "*"
	}
	return r.Channel
}

// TokenRequest asks Issue for a token: an agent's when Agent is set (for
// /mcp only; Channel, when set, the only channel it reaches), else
// Person's.
type TokenRequest struct{ Person, Agent, Channel string }

// Issue makes the token req asks for and returns it: the only time it is
// shown. A request naming both a person and an agent, a channel without
// an agent, or a name that is not valid is errkind.Invalid.
func (t Tokens) Issue(req TokenRequest) (string, TokenRecord, error) {
	switch {
	case req.Agent != "" && req.Person != "":
		return "", TokenRecord{}, errkind.New(errkind.Invalid, "a token is a person's or an agent's, not both")
	case req.Agent != "":
		return t.NewAgent(req.Agent, req.Channel)
	case req.Channel != "":
		return "", TokenRecord{}, errkind.New(errkind.Invalid, "only an agent's token has a channel")
	}
	return t.New(req.Person)
}

// DefaultTokensPath is $XDG_CONFIG_HOME/collab/serve-tokens.json (else
// ~/.config/…).
func DefaultTokensPath(getenv func(string) string) string {
	base := getenv("XDG_CONFIG_HOME")
	if base == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "collab", "serve-tokens.json")
}

func hashToken(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// List returns the tokens; none when the file is missing.
func (t Tokens) List() ([]TokenRecord, error) {
	data, err := os.ReadFile(t.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []TokenRecord
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("tokens %s: %w", t.Path, err)
	}
	return recs, nil
}

// New makes a token for person and returns it: the only time it is shown.
func (t Tokens) New(person string) (string, TokenRecord, error) {
	if err := tree.CheckName("person", person); err != nil {
		return "", TokenRecord{}, errkind.Wrap(errkind.Invalid, err)
	}
	return t.add(TokenRecord{Kind: KindPerson, Person: person})
}

// NewAgent makes a token for agent, for /mcp only, and returns it: the
// only time it is shown. ch, when not "", is the only channel it reaches.
func (t Tokens) NewAgent(agent, ch string) (string, TokenRecord, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return "", TokenRecord{}, errkind.Wrap(errkind.Invalid, err)
	}
	if ch != "" {
		if err := tree.CheckName("channel", ch); err != nil {
			return "", TokenRecord{}, errkind.Wrap(errkind.Invalid, err)
		}
	}
	return t.add(TokenRecord{Kind: KindAgent, Agent: agent, Channel: ch})
}

// add stores rec with a new secret, which it returns.
func (t Tokens) add(rec TokenRecord) (string, TokenRecord, error) {
	recs, err := t.List()
	if err != nil {
		return "", TokenRecord{}, err
	}
	secret, err := token()
	if err != nil {
		return "", TokenRecord{}, err
	}
	secret = tokenPrefix + secret
	hash := hashToken(secret)
	rec.ID, rec.SHA256, rec.Created = "t-"+hash[:12], hash, time.Now().UTC()
	if err := t.write(append(recs, rec)); err != nil {
		return "", TokenRecord{}, err
	}
	return secret, rec, nil
}

// Remove revokes token id.
func (t Tokens) Remove(id string) error {
	recs, err := t.List()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(recs, func(r TokenRecord) bool { return r.ID == id })
	if i < 0 {
		return errkind.Wrap(errkind.NotFound, fmt.Errorf("%w: %s", ErrNoToken, id))
	}
	return t.write(slices.Delete(recs, i, i+1))
}

// Lookup returns the person of a valid person's token, or "" (an agent's
// token names no person).
func (t Tokens) Lookup(secret string) string {
	r, ok := t.Find(secret)
	if !ok || r.IsAgent() {
		return ""
	}
	return r.Person
}

// Find returns the record of a valid token of either kind.
func (t Tokens) Find(secret string) (TokenRecord, bool) {
	if t.Path == "" || !strings.HasPrefix(secret, tokenPrefix) {
		return TokenRecord{}, false
	}
	recs, err := t.List()
	if err != nil {
		return TokenRecord{}, false
	}
	h := hashToken(secret)
	for _, r := range recs {
		if subtle.ConstantTimeCompare([]byte(r.SHA256), []byte(h)) == 1 {
			return r, true
		}
	}
	return TokenRecord{}, false
}

// write replaces the file: a private temp file, renamed over it.
func (t Tokens) write(recs []TokenRecord) (err error) {
	if recs == nil {
		recs = []TokenRecord{}
	}
	data, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(t.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".serve-tokens-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(append(data, '\n')); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), t.Path)
}
