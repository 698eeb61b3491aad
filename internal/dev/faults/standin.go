package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// standinArg, as the first argument, makes this binary the stand-in model
// CLI that the watchers run (the way os/exec's tests re-execute themselves).
const standinArg = "__standin"

// expectedReply is what the stand-in answers to message id whose text is
// text; the checker compares every reply with it.
func expectedReply(id, text string) string {
	sum := sha256.Sum256([]byte(text))
	return "re " + id + " sum " + hex.EncodeToString(sum[:8])
}

// standin reads the prompt (and ignores it), reads the message it answers
// from the tree through the variables the watcher sets, waits --delay plus
// a jitter below --jitter derived from the message id, and prints
// expectedReply.
func standin(args []string, env func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("standin", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	delay := fs.Duration("delay", 0, "fixed delay before answering")
	jitter := fs.Duration("jitter", 0, "extra delay below this, derived from the message id")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	io.Copy(io.Discard, stdin)
	id, ch := env("COLLAB_MESSAGE_ID"), env("COLLAB_CHANNEL")
	file := id + ".json"
	path := filepath.Join(tree.Root(env("COLLAB_ROOT")).Channel(ch), file)
	var (
		data []byte
		err  error
	)
	// The watcher has just read the file; a short retry covers a FUSE cache
	// that still says otherwise to this process.
	for try := 0; try < 50; try++ {
		if data, err = os.ReadFile(path); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintln(stderr, "standin:", err)
		return 1
	}
	m, err := channel.Decode(data, file, ch)
	if err != nil {
		fmt.Fprintln(stderr, "standin:", err)
		return 1
	}
	d := *delay
	if *jitter > 0 {
		h := fnv.New64a()
		h.Write([]byte(id))
		d += time.Duration(h.Sum64() % uint64(*jitter))
	}
	time.Sleep(d)
	fmt.Fprintln(stdout, expectedReply(id, m.Content.Text))
	return 0
}
