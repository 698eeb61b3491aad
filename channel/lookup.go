package channel

import (
	"fmt"

	"collab/safedir"
	"collab/tree"
)

// Lookup reads the message with the given id from a channel.
func Lookup(root tree.Root, channel, id string) (Message, error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return Message{}, err
	}
	if _, err := ParseID(id); err != nil {
		return Message{}, fmt.Errorf("message id %q: %w", id, err)
	}
	d, err := safedir.Open(root.Channel(channel))
	if err != nil {
		return Message{}, fmt.Errorf("open channel: %w", err)
	}
	defer d.Close()
	name := id + nameSuffix
	data, _, err := d.ReadFile(name, MaxMessageSize)
	if err != nil {
		return Message{}, err
	}
	return Decode(data, name, channel)
}
