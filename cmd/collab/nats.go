package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"collab/internal/plumbing/tree"
	"collab/internal/transport/natsbus"
)

// natsFlags are the connection flags shared by the commands that talk NATS.
type natsFlags struct {
	url, creds, nkey, user, ca, cert, key string
}

func addNATSFlags(fs *pflag.FlagSet) *natsFlags {
	f := &natsFlags{}
	fs.StringVar(&f.url, "nats", "", "NATS server URL for fast wake-ups; files stay the truth (env NATS_URL)")
	fs.StringVar(&f.creds, "nats-creds", "", "NATS credentials file (env NATS_CREDS)")
	fs.StringVar(&f.nkey, "nats-nkey", "", "NATS nkey seed file (env NATS_NKEY)")
	fs.StringVar(&f.user, "nats-user", "", "NATS user; the password only from env NATS_PASSWORD (env NATS_USER)")
	fs.StringVar(&f.ca, "nats-ca", "", "CA certificate for NATS TLS (env NATS_CA)")
	fs.StringVar(&f.cert, "nats-cert", "", "client certificate for NATS TLS (env NATS_CERT)")
	fs.StringVar(&f.key, "nats-key", "", "client key for NATS TLS (env NATS_KEY)")
	return f
}

// options layers the flags over the environment. ok is false when no URL
// is configured: NATS is optional.
func (f *natsFlags) options(getenv env, name string, logger *slog.Logger) (natsbus.Options, bool) {
	o := natsbus.OptionsFromEnv(getenv)
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&o.URL, f.url)
	set(&o.CredsFile, f.creds)
	set(&o.NKeySeedFile, f.nkey)
	set(&o.User, f.user)
	set(&o.TLSCA, f.ca)
	set(&o.TLSCert, f.cert)
	set(&o.TLSKey, f.key)
	o.Name = name
	o.Logger = logger
	return o, o.URL != ""
}

// connectOptional connects when NATS is configured. An unreachable server
// is a warning (the files deliver everything); bad credentials are an error.
func connectOptional(ctx context.Context, o natsbus.Options, stderr io.Writer) (*natsbus.Bus, error) {
	b, err := natsbus.Connect(ctx, o)
	if errors.Is(err, natsbus.ErrUnreachable) {
		fmt.Fprintf(stderr, "collab: warning: %v; going on with files only\n", err)
		return nil, nil
	}
	return b, err
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

func runNATS(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "init" && args[0] != "parity") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, "Usage: collab nats init [flags] | collab nats parity --channel C [--since D]")
			return nil
		}
		return usageErrorf("nats: use 'collab nats init' or 'collab nats parity --channel C'")
	}
	sub := args[0]
	fs := newFlags("nats "+sub, stderr)
	nf := addNATSFlags(fs)
	rootf := rootFlag(fs)
	maxAge := fs.Duration("max-age", 30*24*time.Hour, "init: how long the stream keeps messages")
	maxBytes := fs.Int64("max-bytes", 1<<30, "init: the stream's size limit in bytes")
	dup := fs.Duration("duplicates", 2*time.Minute, "init: the stream's duplicate window")
	var ch string
	fs.StringVar(&ch, "channel", "", "parity: the channel to compare (env COLLAB_CHANNEL)")
	since := fs.Duration("since", 24*time.Hour, "parity: compare messages named this recently")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	o, ok := nf.options(getenv, natsbus.ConnName("cli", hostname()), nil)
	if !ok {
		return usageErrorf("nats %s: no server: use --nats URL or set NATS_URL", sub)
	}
	b, err := natsbus.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer b.Close()
	switch sub {
	case "init":
		created, err := b.InitStream(ctx, natsbus.StreamConfig{MaxAge: *maxAge, MaxBytes: *maxBytes, Duplicates: *dup})
		if err != nil {
			return fmt.Errorf("nats init: %w", err)
		}
		verb := "updated"
		if created {
			verb = "created"
		}
		fmt.Fprintf(stdout, "%s stream %s on collab.chat.>\n", verb, natsbus.StreamName)
		return nil
	default:
		if ch == "" {
			ch = getenv("COLLAB_CHANNEL")
		}
		if err := tree.CheckName("channel", ch); err != nil {
			return usageErrorf("nats parity: %v", err)
		}
		set, err := b.StreamIDs(ctx, ch, time.Now().Add(-*since))
		if err != nil {
			return fmt.Errorf("nats parity: %w", err)
		}
		files, err := natsbus.FileIDs(tree.Resolve(*rootf, getenv), ch, set.From)
		if err != nil {
			return fmt.Errorf("nats parity: %w", err)
		}
		noStream, noFile := natsbus.Parity(files, set.IDs)
		fmt.Fprintf(stdout, "channel %s since %s: %d files, %d in the stream\n", ch, set.From.Format(time.RFC3339), len(files), len(set.IDs))
		for _, l := range []struct {
			what string
			ids  []string
		}{{"missing in the stream", noStream}, {"missing in the folder", noFile}, {"stored twice in the stream", set.Duplicates}} {
			if len(l.ids) > 0 {
				fmt.Fprintf(stdout, "%s (%d):\n  %s\n", l.what, len(l.ids), strings.Join(l.ids, "\n  "))
			}
		}
		if len(noStream)+len(noFile) > 0 {
			return &exitError{code: 1}
		}
		return nil
	}
}
