package delivery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// MaxExpireAfter is the longest expiry: a watcher sweeps no message older
// than a day by default (its BounceWindow).
const MaxExpireAfter = 24 * time.Hour

// ParseExpireAfter parses an expiry: a Go duration ("90s", "10m", "2h")
// from one second to [MaxExpireAfter]; "0" and "off" are none (0).
func ParseExpireAfter(s string) (time.Duration, error) {
	if s == "0" || s == "off" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d > MaxExpireAfter {
		return 0, fmt.Errorf("expire-after %s: want a duration from 1s to %s, or off", strconv.Quote(s), MaxExpireAfter)
	}
	return d, nil
}

// SetExpireAfter sets m's expiry (channel.ExtExpireAfter); d ≤ 0 sets
// none.
func SetExpireAfter(m *channel.Message, d time.Duration) {
	if d > 0 {
		m.SetExtension(channel.ExtExpireAfter, json.RawMessage(strconv.Quote(d.String())))
	}
}

// MessageExpireAfter returns m's own expiry, as its sender signed it; ok
// false when it sets none (or one that does not parse: then the channel's
// applies).
func MessageExpireAfter(m *channel.Message) (time.Duration, bool) {
	raw, ok := m.Extension(channel.ExtExpireAfter)
	if !ok {
		return 0, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	d, err := ParseExpireAfter(s)
	return d, err == nil
}

// ChannelSettingsFile is the name of a channel's settings file in its
// folder, ROOT/channels/C/.settings.json: a dot file, which no reader of
// messages lists and no janitor removes.
const ChannelSettingsFile = ".settings.json"

// maxSettings bounds a settings file.
const maxSettings = 4 << 10

// ChannelSettings are a channel's settings: JSON {"expire_after": "10m"}.
// Unknown members are ignored.
type ChannelSettings struct {
	// ExpireAfter is the expiry of the channel's messages that set none
	// ([ParseExpireAfter]; "" none).
	ExpireAfter string `json:"expire_after,omitempty"`
}

// ParseChannelSettings parses and checks the content of a settings file.
func ParseChannelSettings(raw []byte) (ChannelSettings, error) {
	var s ChannelSettings
	if len(raw) > maxSettings {
		return s, errors.New("channel settings: too large")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&s); err != nil {
		return ChannelSettings{}, fmt.Errorf("channel settings: %w", err)
	}
	if s.ExpireAfter != "" {
		if _, err := ParseExpireAfter(s.ExpireAfter); err != nil {
			return ChannelSettings{}, fmt.Errorf("channel settings: %w", err)
		}
	}
	return s, nil
}

// ReadChannelSettings reads channel ch's settings; a channel without a
// settings file has the zero settings.
func ReadChannelSettings(root tree.Root, ch string) (ChannelSettings, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return ChannelSettings{}, err
	}
	d, err := safedir.Open(root.Channel(ch))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ChannelSettings{}, nil
		}
		return ChannelSettings{}, err
	}
	defer d.Close()
	raw, _, err := d.ReadFile(ChannelSettingsFile, maxSettings)
	if errors.Is(err, fs.ErrNotExist) {
		return ChannelSettings{}, nil
	}
	if err != nil {
		return ChannelSettings{}, fmt.Errorf("channel %s settings: %w", ch, err)
	}
	return ParseChannelSettings(raw)
}

// WriteChannelSettings replaces channel ch's settings, atomically.
func WriteChannelSettings(root tree.Root, ch string, s ChannelSettings) error {
	if err := tree.CheckName("channel", ch); err != nil {
		return err
	}
	if s.ExpireAfter != "" {
		if _, err := ParseExpireAfter(s.ExpireAfter); err != nil {
			return err
		}
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	d, err := safedir.Create(root.Channel(ch))
	if err != nil {
		return fmt.Errorf("channel %s settings: %w", ch, err)
	}
	defer d.Close()
	if err := d.Replace(ChannelSettingsFile, data, 0o666); err != nil {
		return fmt.Errorf("channel %s settings: %w", ch, err)
	}
	return nil
}

// ChannelExpireAfter is channel ch's expiry (0: none, or settings that
// cannot be read).
func ChannelExpireAfter(root tree.Root, ch string) time.Duration {
	s, err := ReadChannelSettings(root, ch)
	if err != nil || s.ExpireAfter == "" {
		return 0
	}
	d, _ := ParseExpireAfter(s.ExpireAfter)
	return d
}
