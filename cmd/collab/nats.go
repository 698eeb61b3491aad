package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// natsFlags are the connection flags shared by the commands that talk NATS.
type natsFlags struct {
	url, creds, nkey, user, ca, cert, key string
}

func addNATSFlags(fs *pflag.FlagSet) *natsFlags {
	f := &natsFlags{}
	for _, nf := range []struct {
		p           *string
		name, usage string
		env         string
	}{
		{&f.url, "nats", "NATS server URLs, comma-separated (a cluster's nodes), for fast wake-ups; files stay the truth", "NATS_URL"},
		{&f.creds, "nats-creds", "NATS credentials file", "NATS_CREDS"},
		{&f.nkey, "nats-nkey", "NATS nkey seed file", "NATS_NKEY"},
		{&f.user, "nats-user", "NATS user; the password only from env NATS_PASSWORD", "NATS_USER"},
		{&f.ca, "nats-ca", "CA certificate for NATS TLS", "NATS_CA"},
		{&f.cert, "nats-cert", "client certificate for NATS TLS", "NATS_CERT"},
		{&f.key, "nats-key", "client key for NATS TLS", "NATS_KEY"},
	} {
		fs.StringVar(nf.p, nf.name, "", nf.usage)
		envflag.FromEnv(fs, nf.name, nf.env)
	}
	return f
}

// commandLogger is the NATS connection's logger of a command (not a
// daemon): its user wants to hear of trouble on stderr, not of each
// connect.
func commandLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// options are the connection's options: the flags (which parse filled from
// their variables) and the secrets only the environment gives (password,
// token). ok is false when no URL is configured: NATS is optional.
func (f *natsFlags) options(getenv env, name string, logger *slog.Logger) (natsbus.Options, bool) {
	o := natsbus.OptionsFromEnv(getenv)
	o.URL, o.CredsFile, o.NKeySeedFile, o.User = f.url, f.creds, f.nkey, f.user
	o.TLSCA, o.TLSCert, o.TLSKey = f.ca, f.cert, f.key
	o.Name = name
	o.Logger = logger
	return o, o.URL != ""
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}

var runNATS = subcommands("nats", same(runNATSSub, "init", "parity"), nil)

func runNATSSub(ctx context.Context, sub string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("nats "+sub, stderr)
	c := addCommon(fs, withNATS, withRoot)
	maxAge := fs.Duration("max-age", natsbus.DefaultMaxAge, "init: how long the stream keeps messages")
	maxBytes := fs.Int64("max-bytes", natsbus.DefaultMaxBytes, "init: the stream's size limit in bytes")
	dup := fs.Duration("duplicates", natsbus.DefaultDuplicates, "init: the stream's duplicate window")
	replicas := fs.Int("replicas", 0, "init: the stream's copies on a cluster, 1 to 5, odd best (default 1; an existing stream keeps its own)")
	ch := channelFlag(fs, "parity: the channel to compare")
	since := fs.Duration("since", defaultParitySince, "parity: compare messages named this recently")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	if sub == "parity" {
		if err := checkChannel("nats parity", *ch); err != nil {
			return err
		}
	}
	o, ok := c.nf.options(getenv, natsbus.ConnName("cli", hostname()), commandLogger(stderr))
	if !ok {
		return usageErrorf("nats %s: no server: use --nats URL or set NATS_URL", sub)
	}
	b, err := natsbus.Connect(ctx, o)
	if err != nil {
		return err
	}
	defer b.Close()
	if sub == "init" {
		rep, err := b.Init(ctx, natsbus.StreamConfig{MaxAge: *maxAge, MaxBytes: *maxBytes, Duplicates: *dup, Replicas: *replicas})
		if err != nil {
			return fmt.Errorf("nats init: %w", err)
		}
		return show(stdout, *asJSON, rep, rep.Text())
	}
	// parity: the channel's files against the stream; a difference exits 1.
	p, err := b.CheckParity(ctx, c.tree(getenv), *ch, *since)
	if err != nil {
		return fmt.Errorf("nats parity: %w", err)
	}
	if err = show(stdout, *asJSON, p, p.Text()); err == nil && p.Differ() {
		err = &exitError{code: exitFailure}
	}
	return err
}

// defaultParitySince is how far back nats parity compares by default.
const defaultParitySince = 24 * time.Hour
