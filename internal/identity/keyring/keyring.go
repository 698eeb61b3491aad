// Package keyring is collab's trust root: which public keys speak for which
// agent. Readers check signatures against it (package signing); only an
// admin account writes it.
//
// # Files
//
// A keyring is a folder (ROOT/keys by default, made by 'collab init'; or a
// host-local folder such as /etc/collab/keys) with one file per agent:
//
//	KEYRING/AGENT.json  {"agent": "AGENT", "keys": [KEY, …]}
//	KEY                 {"key": "BASE64", "added": "RFC3339", "revoked": "RFC3339"}
//
// "key" is the standard base64 of a 32-byte Ed25519 public key; "revoked"
// is absent while the key is good. An agent may hold several keys
// (rotation). A key revoked at T verifies nothing dated T or later. Files
// are replaced atomically (temp, fsync, rename, folder fsync) and only by
// [Ring.Trust] and [Ring.Revoke]. Unknown fields are ignored.
//
// # Who may write it
//
// A keyring is worth what its folder's permissions are worth. [Ring.Check]
// accepts a keyring only when the folder and every file in it are owned by
// root or by the owner of the tree's root folder (the admin who ran
// 'collab init'), are writable by no group and no other user, are not
// symbolic links, and are not writable by the account running the check.
// Agents that share the tree through a group can create folders in ROOT
// but cannot make one owned by another account, so a keyring they plant
// is refused; an agent running as the admin's own account could rewrite
// the keyring and is refused as well, unless told that this is a
// single-account setup.
//
// The folder that holds the keyring (ROOT for ROOT/keys) must not let
// anyone but its owner move the keyring aside: owned by root or the admin,
// and, when its group or others may write it, sticky (which 'collab init
// --group' makes it). Otherwise a member of the group could rename the
// real keyring away and put its own in its place.
//
// # A checked ring stays checked
//
// A check is not a moment: a watcher, a dashboard or a bridge runs for
// weeks. Once [Ring.Check] has passed, the ring holds the folder it
// checked, open, and reads every file through that handle, so a folder
// put in its place later is never read; and it checks again, at each
// read, the folder's and the file's owner and mode by the same rule. A
// read that fails the check is an error wrapping [ErrUnsafe]: its agent's
// keys are unknown and nothing it would have signed verifies (a checked
// ring fails closed). A ring whose Check was never called, or failed,
// reads by name as before, for readers that only show verdicts.
package keyring

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

var (
	// ErrUnsafe is wrapped by [Ring.Check] when the keyring could be
	// rewritten by someone other than its admin.
	ErrUnsafe = errors.New("keyring: writable by others than its admin")
	// ErrNotFound is wrapped when a key is not in an agent's list.
	ErrNotFound = errors.New("keyring: no such key")
	// ErrBadKey is wrapped when a public key does not parse.
	ErrBadKey = errors.New("keyring: not an ed25519 public key")
)

const (
	suffix  = ".json"
	maxFile = 256 << 10
	// refresh is how long a lookup's answer is reused before the agent's
	// file is looked at again.
	refresh = 2 * time.Second
)

// Key is one trusted public key of an agent.
type Key struct {
	Public  string     `json:"key"` // base64 (standard) of the 32 bytes
	Added   time.Time  `json:"added"`
	Revoked *time.Time `json:"revoked,omitempty"`
}

// GoodAt reports whether k verifies a signature dated t: it is not
// revoked, or was revoked after t.
func (k Key) GoodAt(t time.Time) bool { return k.Revoked == nil || t.Before(*k.Revoked) }

// file is an agent's keyring file.
type file struct {
	Agent string `json:"agent"`
	Keys  []Key  `json:"keys"`
}

// ParsePublic parses a public key as printed by 'collab key new': the
// standard base64 of 32 bytes, optionally prefixed "ed25519:".
func ParsePublic(s string) (ed25519.PublicKey, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "ed25519:")
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %q", ErrBadKey, tree.Printable(s))
	}
	return ed25519.PublicKey(b), nil
}

// FormatPublic is the form of a public key in the keyring and in signatures.
func FormatPublic(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }

// Ring is a keyring folder. Lookups are cached for a short while (an
// agent's file is read again at most every couple of seconds), so checking
// many signatures costs no file reads. A Ring is safe for concurrent use.
type Ring struct {
	dir string
	now func() time.Time

	mu    sync.Mutex
	cache map[string]cached
	rule  *rule        // set by a Check that passed: every later read is checked
	held  *safedir.Dir // the folder as checked (nil until it exists)
}

// rule is what a checked ring holds every read to.
type rule struct {
	admin    int // owner besides root; -1 for root only
	allowOwn bool
	euid     int
}

type cached struct {
	keys []Key
	at   time.Time
	err  error
}

// Open returns the keyring in dir. A missing folder is an empty keyring.
func Open(dir string) *Ring {
	return &Ring{dir: dir, now: time.Now, cache: make(map[string]cached)}
}

// SetClock replaces the ring's clock (tests).
func (r *Ring) SetClock(now func() time.Time) { r.now = now }

// Dir returns the keyring's folder.
func (r *Ring) Dir() string { return r.dir }

// Keys returns agent's keys, revoked ones included; none when the agent
// has no file.
func (r *Ring) Keys(agent string) ([]Key, error) {
	if r == nil {
		return nil, nil
	}
	now := r.now()
	r.mu.Lock()
	c, ok := r.cache[agent]
	r.mu.Unlock()
	if ok && now.Sub(c.at) < refresh && !now.Before(c.at) {
		return c.keys, c.err
	}
	f, err := r.read(agent)
	c = cached{keys: f.Keys, at: now, err: err}
	r.mu.Lock()
	r.cache[agent] = c
	r.mu.Unlock()
	return c.keys, c.err
}

// HasKeys reports whether agent has any key in the ring, revoked or not:
// such an agent signs, and an unsigned message in its name is suspect.
func (r *Ring) HasKeys(agent string) bool {
	keys, err := r.Keys(agent)
	return err != nil || len(keys) > 0 // unreadable: assume it has keys
}

// Find returns agent's key pub.
func (r *Ring) Find(agent, pub string) (Key, error) {
	keys, err := r.Keys(agent)
	if err != nil {
		return Key{}, err
	}
	for _, k := range keys {
		if k.Public == pub {
			return k, nil
		}
	}
	return Key{}, ErrNotFound
}

func (r *Ring) read(agent string) (file, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return file{}, err
	}
	d, done, err := r.folder()
	if errors.Is(err, fs.ErrNotExist) {
		return file{}, nil
	}
	if err != nil {
		return file{}, err
	}
	defer done()
	data, fi, err := d.ReadFile(agent+suffix, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return file{}, nil
	}
	if err == nil {
		err = r.checkRead(filepath.Join(r.dir, agent+suffix), fi)
	}
	if err != nil {
		return file{}, fmt.Errorf("read keyring: %w", err)
	}
	return decode(agent, data)
}

// decode decodes agent's keyring file.
func decode(agent string, data []byte) (file, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return file{}, fmt.Errorf("keyring %s: %w", agent+suffix, err)
	}
	if f.Agent != agent {
		return file{}, fmt.Errorf("keyring %s: names agent %q", agent+suffix, tree.Printable(f.Agent))
	}
	return f, nil
}

// Trust adds pub to agent's keys, dated now. Adding a key the agent
// already holds unrevoked does nothing; a revoked key stays revoked.
func (r *Ring) Trust(agent, pub string) error {
	k, err := ParsePublic(pub)
	if err != nil {
		return err
	}
	pub = FormatPublic(k)
	return r.update(agent, func(f *file) error {
		for _, have := range f.Keys {
			if have.Public == pub {
				if have.Revoked != nil {
					return fmt.Errorf("key %s of %s was revoked on %s; make a new key", pub, agent, have.Revoked.Format(time.RFC3339))
				}
				return nil
			}
		}
		f.Keys = append(f.Keys, Key{Public: pub, Added: r.now().UTC().Truncate(time.Second)})
		return nil
	})
}

// Revoke revokes agent's key pub (every key when pub is "") from at on.
func (r *Ring) Revoke(agent, pub string, at time.Time) error {
	if pub != "" {
		k, err := ParsePublic(pub)
		if err != nil {
			return err
		}
		pub = FormatPublic(k)
	}
	at = at.UTC()
	return r.update(agent, func(f *file) error {
		n := 0
		for i := range f.Keys {
			k := &f.Keys[i]
			if pub != "" && k.Public != pub {
				continue
			}
			n++
			if k.Revoked == nil || at.Before(*k.Revoked) {
				k.Revoked = &at
			}
		}
		if n == 0 {
			return fmt.Errorf("%s: %w", agent, ErrNotFound)
		}
		return nil
	})
}

func (r *Ring) update(agent string, change func(*file) error) error {
	if err := tree.CheckName("agent", agent); err != nil {
		return err
	}
	f, err := r.read(agent)
	if err != nil {
		return err
	}
	f.Agent = agent
	before := slices.Clone(f.Keys)
	if err := change(&f); err != nil {
		return err
	}
	if slices.EqualFunc(before, f.Keys, sameKey) {
		return nil
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	d, err := safedir.Create(r.dir)
	if err != nil {
		return fmt.Errorf("keyring folder: %w", err)
	}
	defer d.Close()
	if err := writableByAdminOnly(d); err != nil {
		return err
	}
	if err := d.Replace(agent+suffix, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write keyring: %w", err)
	}
	r.mu.Lock()
	delete(r.cache, agent)
	r.mu.Unlock()
	return nil
}

func sameKey(a, b Key) bool {
	return a.Public == b.Public && a.Added.Equal(b.Added) &&
		(a.Revoked == nil) == (b.Revoked == nil) && (a.Revoked == nil || a.Revoked.Equal(*b.Revoked))
}

// List returns every agent's keys, by agent.
func (r *Ring) List() (map[string][]Key, error) {
	out := make(map[string][]Key)
	var first error
	err := r.Files(maxFile, func(name string, data []byte) error {
		agent := strings.TrimSuffix(name, suffix)
		f, err := decode(agent, data)
		if err != nil {
			return err
		}
		out[agent] = f.Keys
		return nil
	}, func(name string, err error) {
		if first == nil {
			first = fmt.Errorf("list keyring: %w", err)
		}
	})
	if err == nil {
		err = first
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Empty reports whether the ring holds no key file.
func (r *Ring) Empty() bool {
	all, err := r.List()
	return err == nil && len(all) == 0
}

// Check reports whether the keyring can be trusted (see the package doc):
// it wraps [ErrUnsafe] and names the folder or file, its owner and mode
// when it cannot. admin is the account that may own it besides root (the
// owner of the tree's root folder; -1 for root only). A missing keyring
// folder is safe (and empty) as long as the folder that would hold it is.
// With allowOwn, a keyring writable by the checking account itself is
// accepted (a single-account setup, where that account is the admin).
//
// Once Check has passed, the ring holds the folder it checked and holds
// every later read to the same rule (package doc): a keyring folder that
// appears later must pass it too.
func (r *Ring) Check(admin int, allowOwn bool) error {
	ru := &rule{admin: admin, allowOwn: allowOwn, euid: os.Geteuid()}
	if err := ru.checkParent(filepath.Dir(r.dir)); err != nil {
		return err
	}
	d, err := safedir.Open(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		r.setRule(ru, nil)
		return nil
	}
	if errors.Is(err, safedir.ErrSymlink) {
		return fmt.Errorf("%s is a symbolic link: %w", r.dir, ErrUnsafe)
	}
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if err := ru.checkFolder(r.dir, d); err != nil {
		d.Close()
		return err
	}
	entries, err := d.ReadDir()
	if err != nil {
		d.Close()
		return fmt.Errorf("keyring: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := d.Lstat(e.Name())
		if err != nil {
			continue // gone
		}
		if err := ru.check(filepath.Join(r.dir, e.Name()), fi); err != nil {
			d.Close()
			return err
		}
	}
	r.setRule(ru, d)
	return nil
}

func (r *Ring) setRule(ru *rule, d *safedir.Dir) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held != nil {
		r.held.Close()
	}
	r.rule, r.held = ru, d
	clear(r.cache)
}

// folder returns the keyring folder to read and a function to call when
// done with it. A checked ring gives the folder it holds (opening and
// checking it the first time when it did not exist at the check) after
// checking its owner and mode again; any other ring opens the folder by
// name. A missing folder is fs.ErrNotExist.
func (r *Ring) folder() (*safedir.Dir, func(), error) {
	r.mu.Lock()
	ru, held := r.rule, r.held
	r.mu.Unlock()
	if ru == nil {
		d, err := safedir.Open(r.dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("open keyring: %w", err)
		}
		return d, func() { d.Close() }, nil
	}
	if held == nil {
		if err := ru.checkParent(filepath.Dir(r.dir)); err != nil {
			return nil, nil, err
		}
		d, err := safedir.Open(r.dir)
		if errors.Is(err, safedir.ErrSymlink) {
			return nil, nil, fmt.Errorf("%s is a symbolic link: %w", r.dir, ErrUnsafe)
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("open keyring: %w", err)
		}
		if err := ru.checkFolder(r.dir, d); err != nil {
			d.Close()
			return nil, nil, err
		}
		r.mu.Lock()
		if r.held == nil && r.rule == ru {
			r.held = d
		} else {
			d.Close()
		}
		held = r.held
		r.mu.Unlock()
		if held == nil {
			return r.folder()
		}
	}
	if err := ru.checkFolder(r.dir, held); err != nil {
		return nil, nil, err
	}
	return held, func() {}, nil
}

// checkRead checks a file just read (fi from the open file) when the ring
// is checked.
func (r *Ring) checkRead(path string, fi fs.FileInfo) error {
	r.mu.Lock()
	ru := r.rule
	r.mu.Unlock()
	if ru == nil {
		return nil
	}
	return ru.check(path, fi)
}

// check applies the rule to one folder or file of the keyring.
func (ru *rule) check(path string, fi fs.FileInfo) error {
	uid, nlink, ok := safedir.Ownership(fi)
	if !ok {
		return nil
	}
	mode := fi.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: %w", path, ErrUnsafe)
	case uid != 0 && uid != ru.admin:
		return fmt.Errorf("%s is owned by uid %d, neither root nor the tree's owner (uid %d): %w", path, uid, ru.admin, ErrUnsafe)
	case mode.Perm()&0o022 != 0:
		return fmt.Errorf("%s (mode %v) is writable by its group or others: %w; run chmod go-w", path, mode, ErrUnsafe)
	case uid == ru.euid && !ru.allowOwn:
		return fmt.Errorf("%s is owned by this account (uid %d), so an agent running here could replace a key: %w; keep the keyring owned by an admin account, or pass --allow-writable-keyring on a single-account setup", path, uid, ErrUnsafe)
	case mode.IsRegular() && nlink > 1:
		return fmt.Errorf("%s has %d links, so it is also a file elsewhere: %w; copy it to a file of its own", path, nlink, ErrUnsafe)
	}
	return nil
}

// checkFolder checks the open keyring folder d (at path).
func (ru *rule) checkFolder(path string, d *safedir.Dir) error {
	fi, err := d.Stat()
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	return ru.check(path, fi)
}

// checkParent checks the folder that holds the keyring: only its owner
// (root or the admin) may move the keyring out of it, so it is owned by
// one of them and, when others may write it, sticky.
func (ru *rule) checkParent(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid, mode := int(st.Uid), fi.Mode()
	switch {
	case uid != 0 && uid != ru.admin:
		return fmt.Errorf("%s, which holds the keyring, is owned by uid %d, neither root nor the tree's owner (uid %d), who could move the keyring aside: %w", path, uid, ru.admin, ErrUnsafe)
	case mode.Perm()&0o022 != 0 && mode&fs.ModeSticky == 0:
		return fmt.Errorf("%s (mode %v), which holds the keyring, lets its group or others rename it and put another in its place: %w; as its owner run 'collab init --group GROUP' again, or chmod +t %s", path, mode, ErrUnsafe, path)
	}
	return nil
}

// Files calls fn with the name and content of each agent's file in the
// keyring (AGENT.json; temp and other files are skipped), read as [Ring.Keys]
// reads them: through the checked folder, each file checked, when the ring
// has passed [Ring.Check]. A file that fails the check, or cannot be read,
// is passed to bad instead (nil: skipped). A missing folder has no files.
func (r *Ring) Files(maxLen int64, fn func(name string, data []byte) error, bad func(name string, err error)) error {
	d, done, err := r.folder()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer done()
	return d.ReadDirBatches(256, func(entries []fs.DirEntry) error {
		for _, e := range entries {
			name := e.Name()
			agent, ok := strings.CutSuffix(name, suffix)
			if !ok || !tree.ValidName(agent) {
				continue
			}
			data, fi, err := d.ReadFile(name, maxLen)
			if err == nil {
				err = r.checkRead(filepath.Join(r.dir, name), fi)
			}
			if err != nil {
				if bad != nil && !errors.Is(err, fs.ErrNotExist) {
					bad(name, err)
				}
				continue
			}
			if err := fn(name, data); err != nil {
				return err
			}
		}
		return nil
	})
}

// Owner returns the uid that owns path, or -1.
func Owner(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	if uid, _, ok := safedir.Ownership(fi); ok {
		return uid
	}
	return -1
}

// Create makes the keyring folder if it is missing, writable by its owner
// only ('collab init' runs it as the admin).
func (r *Ring) Create() error {
	d, err := safedir.Create(r.dir)
	if err != nil {
		return fmt.Errorf("keyring folder: %w", err)
	}
	defer d.Close()
	return writableByAdminOnly(d)
}

// writableByAdminOnly takes group and other write permission from the
// keyring folder d (safedir.Create leaves a new folder group-writable
// under a umask of 002).
func writableByAdminOnly(d *safedir.Dir) error {
	fi, err := d.Stat()
	if err != nil {
		return fmt.Errorf("keyring folder: %w", err)
	}
	if m := fi.Mode(); m.Perm()&0o022 != 0 {
		if err := d.Chmod(m.Perm() &^ 0o022); err != nil {
			return fmt.Errorf("keyring folder: %w", err)
		}
	}
	return nil
}

// In returns the keyring in folder dir, or the tree's (ROOT/keys) when dir
// is empty.
func In(root tree.Root, dir string) *Ring {
	if dir == "" {
		dir = root.Keys()
	}
	return Open(dir)
}
