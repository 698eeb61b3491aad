package natsbus

import (
	"context"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ParityReport is the comparison of one channel's files with the stream
// over a span (collab nats parity; its JSON is nats parity --json).
type ParityReport struct {
	Channel         string    `json:"channel"`
	Since           time.Time `json:"since"` // the span's start (StreamSet.From)
	Files           int       `json:"files"`
	Stream          int       `json:"stream"`
	MissingInStream []string  `json:"missing_in_stream"`
	MissingInFolder []string  `json:"missing_in_folder"`
	Duplicates      []string  `json:"duplicates"`
}

// Differ reports whether the files and the stream disagree.
func (p ParityReport) Differ() bool { return len(p.MissingInStream)+len(p.MissingInFolder) > 0 }

// CheckParity compares channel ch's files under root with the stream over
// the last since: what each side lacks, and what the stream holds twice.
// Its lists are never nil (JSON [] rather than null).
func (b *Bus) CheckParity(ctx context.Context, root tree.Root, ch string, since time.Duration) (ParityReport, error) {
	set, err := b.StreamIDs(ctx, ch, time.Now().Add(-since))
	if err != nil {
		return ParityReport{}, err
	}
	files, err := FileIDs(root, ch, set.From)
	if err != nil {
		return ParityReport{}, err
	}
	noStream, noFile := Parity(files, set.IDs)
	return ParityReport{Channel: ch, Since: set.From, Files: len(files), Stream: len(set.IDs),
		MissingInStream: nonNil(noStream), MissingInFolder: nonNil(noFile), Duplicates: nonNil(set.Duplicates)}, nil
}

// nonNil returns s, or an empty slice for nil.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Wake subscribes to channel ch and returns the names of the message files
// announced there, until stop: a wait's early wake (the files stay the
// truth, so an announcement that finds the buffer full is dropped: the
// next poll finds it).
func (b *Bus) Wake(ch string) (files <-chan string, stop func(), err error) {
	wake := make(chan string, 256)
	sub, err := b.Subscribe([]string{ch}, func(m channel.Message) {
		select {
		case wake <- m.File:
		default:
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return wake, sub.Stop, nil
}
