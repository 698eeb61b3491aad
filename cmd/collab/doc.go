package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/documents"
)

func runDoc(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("doc", helpText("doc"), stderr)
	ch := needChannel(fs, "channel")
	text := fs.String("text", "", `content ("-" reads standard input, the default)`)
	ifVersion := fs.String("if-version", "", "write or delete only if the file is at this version (from read --json)")
	asJSON := fs.Bool("json", false, "print JSON")
	c := addCommon(fs, withRemote, withNATS, withRemoteAgent, withRoot)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf("doc: no action: use one of %s", strings.Join(service.DocActions, ", "))
	}
	req := service.DocRequest{Action: fs.Arg(0), Channel: *ch, IfVersion: *ifVersion}
	action, rest, words := req.Action, fs.Args()[1:], []string(nil)
	switch {
	case req.Writes() && len(rest) > 0 && rest[0] == "-":
		words = rest // no FILE: standard input into the default file
	case req.Writes() && len(rest) > 0:
		req.File, words = rest[0], rest[1:]
	case len(rest) > 1:
		return usageErrorf("doc %s: one file at a time, got %q", action, rest)
	case len(rest) == 1:
		req.File = rest[0]
	}
	switch {
	case action == "list" && len(rest) > 0:
		return usageErrorf("doc list: unexpected argument %q", rest[0])
	case *ifVersion != "" && action != "write" && action != "delete":
		return usageErrorf("doc %s: --if-version is for write and delete", action)
	case fs.Changed("text") && !req.Writes():
		return usageErrorf("doc %s: --text is for write, append and create", action)
	}
	if _, err := req.Check(); err != nil {
		return fmt.Errorf("doc %s: %w", action, err)
	}
	if req.Writes() {
		content, err := docContent(action, fs.Changed("text"), *text, words, stdin)
		if err != nil {
			return err
		}
		req.Content = content
	}
	return docDo(ctx, c, req, *asJSON, getenv, stdout, stderr)
}

// docDo makes the one call of collab doc, on the mount or through a
// bridge, and prints its result.
func docDo(ctx context.Context, c *common, req service.DocRequest, asJSON bool, getenv env, stdout, stderr io.Writer) error {
	cmd := "doc " + req.Action
	sp := c.spec(getenv)
	sp.cmd = cmd
	return useService(ctx, sp, getenv, stderr, func(svc *openedService) error {
		r, err := svc.Doc(ctx, service.Actor{Name: svc.agent}, req)
		if err != nil {
			// A missing file, or one that is not the folder's: exit 1, as documented.
			return exitAs(exitFailure, fmt.Errorf("%s: %w", cmd, err), errkind.NotFound, errkind.Forbidden)
		}
		switch req.Action {
		case "read":
			return showLine(stdout, asJSON, r.Doc, r.Doc.Content)
		case "list":
			if r.More {
				fmt.Fprintln(stderr, "collab: the listing is cut to what a bridge reply holds; list on the mount for all")
			}
			return docList(stdout, r.Entries, asJSON)
		case "delete":
			return nil
		}
		// A change: the version it made.
		return showLine(stdout, asJSON, map[string]string{"file": r.File, "version": r.Version}, r.Version+"\n")
	})
}

// docList prints a listing.
func docList(stdout io.Writer, list []documents.Entry, asJSON bool) error {
	if asJSON {
		return jsonLine(stdout, append([]documents.Entry{}, list...)) // [], not null
	}
	rows := [][]string{{"FILE", "SIZE", "MODIFIED"}}
	for _, e := range list {
		rows = append(rows, []string{e.File, fmt.Sprint(e.Size), e.Modified.Format(time.RFC3339)})
	}
	return printTable(stdout, rows)
}

// docContent returns the content: --text or the words with a final
// newline, or standard input as it is ("-", or nothing given).
func docContent(action string, textSet bool, text string, words []string, stdin io.Reader) (string, error) {
	cmd := "doc " + action
	text, from, err := readText(cmd, textSet, text, words, stdin, documents.DefaultMaxSize, "document")
	switch {
	case err != nil:
		return "", err
	case from == textNone:
		return readStdin(cmd, stdin, documents.DefaultMaxSize, "document")
	case from == textArgs && !strings.HasSuffix(text, "\n"):
		text += "\n"
	}
	return text, nil
}
