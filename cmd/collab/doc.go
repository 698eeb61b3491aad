package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"
	"time"

	"collab/internal/plumbing/tree"
	"collab/internal/workspace/documents"
)

// exitConflict is the exit code of a write refused by --if-version, or of
// a create whose file exists.
const exitConflict = 3

var docActions = []string{"read", "write", "append", "create", "delete", "list"}

func runDoc(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("doc", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab doc read   --channel C [FILE] [--json]
       collab doc write  --channel C [FILE] [--if-version V] [--text T | < FILE]
       collab doc append --channel C [FILE] [--text T | < FILE]
       collab doc create --channel C FILE [--text T | < FILE]
       collab doc delete --channel C FILE [--if-version V]
       collab doc list   --channel C [--json]

A channel's shared documents, in ROOT/docs/CHANNEL. FILE is a path inside
that folder such as notes.md or findings/auth.md (letters, digits, '.', '_',
'-' and '/'; no "..", no absolute paths, no dot-files); it defaults to
notes.md, the entry point. Content comes from --text (a final newline is
added if missing) or, without --text, standard input, verbatim.

read prints the content; with --json also its version. write replaces the
file; with --if-version it refuses when the file is no longer at that version
(someone changed it since you read it). append adds to the end; appends from
any number of hosts at once are all kept. create fails if FILE exists.
write, append and create print the new version.

Exit codes: 0 ok, 1 failure, 2 usage, 3 conflict (--if-version did not match,
or create found the file).

Flags:
`)
		fs.PrintDefaults()
	}
	var ch string
	fs.StringVar(&ch, "channel", "", "channel (env COLLAB_CHANNEL, then COLLAB_SESSION)")
	fs.StringVarP(&ch, "session", "s", "", "same as --channel")
	text := fs.String("text", "", "content (default: standard input)")
	ifVersion := fs.String("if-version", "", "write or delete only if the file is at this version (from read --json)")
	asJSON := fs.Bool("json", false, "print JSON")
	rootf := rootFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf("doc: no action: use one of %s", strings.Join(docActions, ", "))
	}
	action, rest := fs.Arg(0), fs.Args()[1:]
	known := false
	for _, a := range docActions {
		known = known || a == action
	}
	if !known {
		return usageErrorf("doc: unknown action %q: use one of %s", action, strings.Join(docActions, ", "))
	}
	if ch == "" {
		ch = cmp.Or(getenv("COLLAB_CHANNEL"), getenv("COLLAB_SESSION"))
	}
	if ch == "" {
		return usageErrorf("doc: no channel: use --channel or set COLLAB_CHANNEL")
	}
	if err := tree.CheckName("channel", ch); err != nil {
		return usageErrorf("doc: %v", err)
	}
	file := documents.EntryPoint
	switch {
	case len(rest) > 1:
		return usageErrorf("doc %s: one file at a time, got %q", action, rest)
	case len(rest) == 1:
		file = rest[0]
	case action == "create" || action == "delete":
		return usageErrorf("doc %s: name the file", action)
	}
	if action == "list" && len(rest) > 0 {
		return usageErrorf("doc list: unexpected argument %q", rest[0])
	}
	if err := documents.CheckPath(file); err != nil {
		return usageErrorf("doc %s: %v", action, err)
	}
	if *ifVersion != "" && action != "write" && action != "delete" {
		return usageErrorf("doc %s: --if-version is for write and delete", action)
	}
	if fs.Changed("text") && (action == "read" || action == "delete" || action == "list") {
		return usageErrorf("doc %s: --text is for write, append and create", action)
	}
	f, err := documents.New(tree.Resolve(*rootf, getenv), ch, documents.Options{})
	if err != nil {
		return usageErrorf("doc: %v", err)
	}

	switch action {
	case "read":
		d, err := f.Read(file)
		if err != nil {
			return docError("read", ch, file, err)
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(d)
		}
		_, err = io.WriteString(stdout, d.Content)
		return err
	case "list":
		list, err := f.List()
		if err != nil {
			return docError("list", ch, "", err)
		}
		if *asJSON {
			if list == nil {
				list = []documents.Entry{}
			}
			return json.NewEncoder(stdout).Encode(list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tSIZE\tMODIFIED")
		for _, e := range list {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", e.File, e.Size, e.Modified.Format(time.RFC3339))
		}
		return tw.Flush()
	case "delete":
		if err := f.Delete(ctx, file, *ifVersion); err != nil {
			return docError("delete", ch, file, err)
		}
		return nil
	}

	content, err := docContent(fs.Changed("text"), *text, stdin)
	if err != nil {
		return err
	}
	var version string
	switch action {
	case "write":
		version, err = f.Write(ctx, file, content, *ifVersion)
	case "append":
		version, err = f.Append(ctx, file, content)
	case "create":
		version, err = f.Create(ctx, file, content)
	}
	if err != nil {
		return docError(action, ch, file, err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]string{"file": file, "version": version})
	}
	_, err = fmt.Fprintln(stdout, version)
	return err
}

// docContent returns --text with a final newline, or standard input.
func docContent(textSet bool, text string, stdin io.Reader) (string, error) {
	if textSet {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text, nil
	}
	data, err := io.ReadAll(io.LimitReader(stdin, documents.DefaultMaxSize+1))
	if err != nil {
		return "", fmt.Errorf("doc: read standard input: %w", err)
	}
	if len(data) > documents.DefaultMaxSize {
		return "", usageErrorf("doc: standard input is larger than the %d-byte document limit", documents.DefaultMaxSize)
	}
	return string(data), nil
}

// docError turns a docs error into a clear message and exit code.
func docError(action, ch, file string, err error) error {
	switch {
	case errors.Is(err, documents.ErrConflict):
		return &exitError{code: exitConflict, msg: fmt.Sprintf("doc %s: %v", action, err)}
	case errors.Is(err, fs.ErrExist) && action == "create":
		return &exitError{code: exitConflict, msg: fmt.Sprintf("doc create: %s already exists in channel %s", file, ch)}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("doc %s: %s does not exist in channel %s", action, file, ch)
	case errors.Is(err, documents.ErrBadPath):
		return usageErrorf("doc %s: %v", action, err)
	}
	return fmt.Errorf("doc %s: %w", action, err)
}
