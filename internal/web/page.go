package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
)

// The page app: html/template pages with htmx and its SSE extension,
// vendored in static/ (see static/VERSIONS) and embedded, so nothing is
// fetched at run time and no script is inline (the Content-Security-Policy
// allows only this server's own files).
var (
	//go:embed templates/*.html
	templateFS embed.FS
	//go:embed static
	staticFS embed.FS

	pageTemplates = template.Must(template.ParseFS(templateFS, "templates/*.html"))
)

// Bounds of what one page shows and one event stream is told.
const (
	// PageMessages is how many messages a page of the transcript holds
	// (channel.Tail: the cost follows this, not the channel).
	PageMessages = 50
	// pageChannels bounds the channel list.
	pageChannels = 200
	// maxSeen bounds the names an event stream is told were shown.
	maxSeen = PageMessages
)

// routePages adds the page app's routes to mux; every route it adds is
// behind the sign-in (see Server.Handler).
func (s *Server) routePages(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /c", s.pageOpen)
	mux.HandleFunc("GET /c/{channel}", s.channelPage)
	mux.HandleFunc("GET /agents", s.agentsPage)
	mux.HandleFunc("GET /board", s.agentsBoard)
	mux.HandleFunc("GET /agents/{agent}", s.agentPage)
	mux.HandleFunc("POST /agents/{agent}/jobs/{job}/kill", s.pageKill)
	mux.HandleFunc("GET /agents/{agent}/jobs/{job}/events", s.pageJobEvents)
	mux.HandleFunc("GET /c/{channel}/events", s.pageEvents)
	mux.HandleFunc("GET /c/{channel}/older", s.pageOlder)
	mux.HandleFunc("GET /c/{channel}/reply", s.pageReply)
	mux.HandleFunc("POST /c/{channel}/post", s.pagePost)
	s.routeWorkPages(mux)
	s.routeTimelinePages(mux) // page_message.go
	mux.Handle("GET /static/", staticFiles())
}

// staticFiles serves the embedded files with an ETag (a hash of each), so
// a browser asks again at each page load but fetches a file only when a
// new build changed it.
func staticFiles() http.Handler {
	tags := map[string]string{}
	_ = fs.WalkDir(staticFS, "static", func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, err := staticFS.ReadFile(name); err == nil {
				sum := sha256.Sum256(data)
				tags["/"+name] = `"` + hex.EncodeToString(sum[:16]) + `"`
			}
		}
		return nil
	})
	files := http.FileServerFS(staticFS)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tag, ok := tags[r.URL.Path]; ok {
			w.Header().Set("ETag", tag)
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	})
}

// page opens on the most recently active channel.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	chans, err := s.pageChannels()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(chans) > 0 {
		http.Redirect(w, r, "/c/"+url.PathEscape(chans[0].Name), http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "page", pageData{Person: personOf(r), Channels: chans})
}

// pageOpen opens the channel named in the form's "name" (a new one starts
// with its first post).
func (s *Server) pageOpen(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(strings.TrimSpace(r.URL.Query().Get("name")), "#")
	if err := tree.CheckName("channel", name); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, "/c/"+url.PathEscape(name), http.StatusSeeOther)
}

// pageData is what the page template shows.
type pageData struct {
	Person   string
	Channels []channelItem
	Channel  string // "": no channel yet
	Messages []messageView
	Older    string // the id to ask the next older page with; "": none
	Events   string // the event stream's URL
	Agents   []string
}

// olderData is a page of older messages, swapped in for the button that
// asked for it.
type olderData struct {
	Channel  string
	Messages []messageView
	Older    string
}

// pageOlder answers the page of messages before the id "before", for the
// transcript's "Older messages" button: the messages and, when there are
// more, the button for the page before them. Its cost is one page
// (Server.Messages).
func (s *Server) pageOlder(w http.ResponseWriter, r *http.Request) {
	ch := r.PathValue("channel")
	before := r.URL.Query().Get("before")
	if err := tree.CheckName("channel", ch); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if _, err := channel.ParseID(before); err != nil {
		http.Error(w, "before is not a message id", http.StatusBadRequest)
		return
	}
	msgs, older, err := s.pageMessages(ch, before, PageMessages, personOf(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, http.StatusOK, "older", olderData{Channel: ch, Messages: threads(msgs), Older: older})
}

// pageReply answers the post box set to reply to the message "to" (read
// to show whom and what it answers), or the plain box without "to".
func (s *Server) pageReply(w http.ResponseWriter, r *http.Request) {
	ch := r.PathValue("channel")
	if err := tree.CheckName("channel", ch); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	f := postForm{Channel: ch, Agents: s.pageAgents()}
	if to := r.URL.Query().Get("to"); to != "" {
		if _, err := channel.ParseID(to); err != nil {
			http.Error(w, "to is not a message id", http.StatusBadRequest)
			return
		}
		m, err := channel.Lookup(s.cfg.Root, ch, to)
		if err != nil {
			http.Error(w, "no such message", http.StatusNotFound)
			return
		}
		f.ReplyTo, f.ReplyFrom, f.ReplyText = to, m.From, snippet(m.Content.Text)
		if slices.Contains(f.Agents, m.From) {
			f.To = m.From // answer the sender, when it is an agent
		}
	}
	s.render(w, http.StatusOK, "post", f)
}

// snippet is the start of a message's first line, for a reply's label.
func snippet(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if r := []rune(line); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return line
}

// OnAgents tells the nav this is not the agents page.
func (pageData) OnAgents() bool { return false }

// PostForm is the page's empty post box.
func (d pageData) PostForm() postForm { return postForm{Channel: d.Channel, Agents: d.Agents} }

// channelItem is one channel in the list.
type channelItem struct {
	Name   string
	Active time.Time
	Unread int    // messages from others after the person's cursor, at most maxUnread+1
	newest string // the newest message's id ("": none)
}

// Count is the unread count as the list shows it: "" for none, "99+"
// beyond maxUnread.
func (c channelItem) Count() string {
	switch {
	case c.Unread <= 0:
		return ""
	case c.Unread > maxUnread:
		return strconv.Itoa(maxUnread) + "+"
	}
	return strconv.Itoa(c.Unread)
}

// withUnread fills the unread counts of person's channels (but current,
// the one they are looking at): one folder listing each, no message read
// (see unread), but none for a channel whose newest message is within the
// cursor (read up: nothing new to count).
func (s *Server) withUnread(chans []channelItem, person, current string) {
	st, err := loadSeen(s.cfg.Root, person)
	if err != nil {
		s.log.Warn("page: unread", "person", person, "err", err)
	}
	for i := range chans {
		if chans[i].Name != current && chans[i].newest != "" && !seenThrough(st.Seen[chans[i].Name], chans[i].newest) {
			chans[i].Unread = unread(s.cfg.Root, chans[i].Name, person, st.Seen[chans[i].Name])
		}
	}
}

// seen moves person's cursor in ch to id (markSeen), logging a failure:
// a cursor left behind only shows a count too high.
func (s *Server) seen(person, ch string, ids ...string) {
	if err := markSeen(s.cfg.Root, person, ch, ids...); err != nil {
		s.log.Warn("page: seen cursor", "person", person, "channel", ch, "err", err)
	}
}

// When is the channel's last activity, for the list.
func (c channelItem) When() string {
	if c.Active.IsZero() {
		return ""
	}
	return c.Active.UTC().Format("2006-01-02 15:04")
}

// messageView is one message as the page shows it (the API's view and
// how to show it); html/template escapes every field.
type messageView struct {
	MessageView
	Stamp, When string // its time, for datetime and to read
	Kind        string // its type unless chat
	CodeText    string
	Mark        string // as 'collab read' marks the sender; "" when verified
	Forged      bool
	Delivered   []string // "agent: state" per addressee of an addressed message
	ReplyTo     string   // the sender of the message this answers, from its id
	Body        []segment
	Options     []string // a question to the viewer: its answers, as buttons
	Fold        string   // the first line, when the text is long and shown folded
	Lines       int
	// ThreadOf is the id of the first message of the thread this one
	// answers ("": it starts one); Replies, the messages of its thread
	// folded under it (see threads).
	ThreadOf string
	Replies  []messageView
	// Asks: a reply of the thread asks the viewer a question, so the
	// thread shows open.
	Asks bool
}

// threads folds each message of a page under the first message of its
// thread when that message is on the same page (and itself starts a
// thread), in channel order, open when one of them asks the viewer a
// question; the others stay in place, showing what they
// answer by a link. Its cost is the page: no message is read. The event
// stream's new messages carry their thread's id and page.js moves each
// under its first message when the page shows it.
func threads(msgs []messageView) []messageView {
	pos := make(map[string]int, len(msgs))
	for i := range msgs {
		pos[msgs[i].ID] = i
	}
	folded := make([]bool, len(msgs))
	for i := range msgs {
		j, ok := pos[msgs[i].ThreadOf]
		if ok && j != i && msgs[j].ThreadOf == "" {
			folded[i] = true
			msgs[j].Replies = append(msgs[j].Replies, msgs[i])
			msgs[j].Asks = msgs[j].Asks || len(msgs[i].Options) > 0
		}
	}
	out := make([]messageView, 0, len(msgs))
	for i := range msgs {
		if !folded[i] {
			out = append(out, msgs[i])
		}
	}
	return out
}

// segment is a run of a message's text: prose, or a fenced code block.
type segment struct {
	Code bool
	Lang string
	Text string
}

// Folding: a text longer than this many lines or bytes shows folded.
const (
	foldLines = 24
	foldBytes = 4000
)

// segments splits text at Markdown code fences (``` lines); an unclosed
// fence runs to the end.
func segments(text string) []segment {
	if text == "" {
		return nil
	}
	var out []segment
	cur := segment{}
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 || cur.Code {
			cur.Text = strings.TrimSuffix(b.String(), "\n")
			out = append(out, cur)
		}
		b.Reset()
	}
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			flush()
			if cur.Code {
				cur = segment{}
			} else {
				cur = segment{Code: true, Lang: strings.TrimSpace(rest)}
			}
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	flush()
	return out
}

// channelPage shows a channel's newest page and connects its event stream.
func (s *Server) channelPage(w http.ResponseWriter, r *http.Request) {
	ch := r.PathValue("channel")
	if err := tree.CheckName("channel", ch); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	person := personOf(r)
	msgs, before, err := s.pageMessages(ch, "", PageMessages, person)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ids := newestSecond(msgs); len(ids) > 0 {
		s.seen(person, ch, ids...)
	}
	chans, err := s.pageChannels()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.withUnread(chans, person, ch)
	d := pageData{Person: person, Channels: chans, Channel: ch, Older: before, Agents: s.pageAgents(), Messages: threads(msgs)}
	d.Events = eventsURL(ch, msgs)
	s.render(w, http.StatusOK, "page", d)
}

// newestSecond is the ids of the newest second of msgs (by the newest
// one's name), at most maxSeen.
func newestSecond(msgs []messageView) []string {
	var ids []string
	if len(msgs) > 0 {
		top, _ := channel.ParseID(msgs[len(msgs)-1].ID)
		for i := len(msgs) - 1; i >= 0 && len(ids) < maxSeen; i-- {
			if n, err := channel.ParseID(msgs[i].ID); err == nil && n.Time.Equal(top.Time) {
				ids = append(ids, msgs[i].ID)
			}
		}
	}
	return ids
}

// eventsURL is the channel's event stream, told the names of the newest
// second of msgs (already shown) so that it sends only what is newer.
func eventsURL(ch string, msgs []messageView) string {
	q := url.Values{"seen": newestSecond(msgs)}
	if len(q["seen"]) == 0 {
		delete(q, "seen")
	}
	u := "/c/" + url.PathEscape(ch) + "/events"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// pageEvents streams the channel's new messages as server-sent events of
// type "message", each a rendered list item for the transcript, its id the
// message id. Its start is the ids in "seen" (the page's newest second) or
// Last-Event-ID (a reconnect, when resumeAt honours it); with neither,
// now. Like the API's stream it is bounded by MaxStreams and
// MaxStreamsPerPerson (503 beyond), woken by inotify on this host and by
// the poll for other hosts' writes, kept alive, and ended on shutdown.
func (s *Server) pageEvents(w http.ResponseWriter, r *http.Request) {
	ch := r.PathValue("channel")
	if err := tree.CheckName("channel", ch); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	rc, release, ok := s.openStream(w, r)
	if !ok {
		return
	}
	defer release()
	seen := r.URL.Query()["seen"]
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		if _, ok := s.resumeAt(ch, id); ok {
			seen = append(seen, s.sentThrough(ch, id)...)
		}
	}
	var from *channel.Cursor // nil: from now
	if cur, ok := cursorOf(seen); ok {
		from = &cur
	}
	s.stream(r.Context(), w, rc, s.followChannel(r.Context(), ch, from, func(m *channel.Message) bool {
		v := s.view(ch, m)
		if !delivery.IsNotice(m) {
			s.withDelivery(&v, ch, m)
		}
		var b bytes.Buffer
		if err := pageTemplates.ExecuteTemplate(&b, "message", s.pageView(v, m, personOf(r))); err != nil {
			s.log.Warn("page events: render", "channel", ch, "err", err)
			return false
		}
		err := writeEvent(w, "message", m.Key(), b.Bytes())
		if errors.Is(err, errEventField) {
			return true // not a name the reader returns: nothing to send
		}
		if err == nil {
			s.seen(personOf(r), ch, m.Key()) // shown live: seen
		}
		return err == nil
	}), nil)
}

// sentThrough returns the ids a stream sent up to and including the event
// id, of that id's second: the stream sends in channel order, so those are
// the ones before it in that order. It reads only that second's messages
// (at most maxSeen).
func (s *Server) sentThrough(ch, id string) []string {
	top, err := channel.ParseID(id)
	if err != nil {
		return nil
	}
	same := func(_ string, n channel.Name) bool { return n.Time.Equal(top.Time) }
	msgs, _, _, err := channel.Newest(s.cfg.Root, ch, maxSeen, same, nil)
	if err != nil {
		return []string{id}
	}
	var out []string
	for i := range msgs {
		out = append(out, msgs[i].Key())
		if msgs[i].Key() == id {
			return out
		}
	}
	return []string{id} // gone: only it
}

// cursorOf returns a reader's position after the messages of the given
// ids: every name before the newest one's second (or before now, when
// that is later: a name from the future, which anyone who can write the
// channel can plant, must not hold back every message to come), and
// theirs. ok is false when no id parses.
func cursorOf(ids []string) (channel.Cursor, bool) {
	var cur channel.Cursor
	now := time.Now().Truncate(time.Second) // names are to the second
	for _, id := range ids[:min(len(ids), 2*maxSeen)] {
		n, err := channel.ParseID(id)
		if err != nil {
			continue
		}
		t := n.Time
		if t.After(now) {
			t = now
		}
		if t.After(cur.Floor) {
			cur.Floor = t
		}
		cur.Seen = append(cur.Seen, id+".json")
	}
	return cur, len(cur.Seen) > 0
}

// pagePost posts the form's text into the channel as the signed-in person
// (Server.Post: signed, send's checks) and answers an empty form; the
// message itself comes back through the event stream. A refusal answers
// the form with the text kept and the reason.
func (s *Server) pagePost(w http.ResponseWriter, r *http.Request) {
	ch := r.PathValue("channel")
	if err := tree.CheckName("channel", ch); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	text, replyTo, to := r.PostFormValue("text"), r.PostFormValue("reply_to"), r.PostFormValue("to")
	if _, err := s.Post(r.Context(), ch, personOf(r), PostRequest{Text: text, ReplyTo: replyTo, To: to}); err != nil {
		code := httpStatus(err)
		if code == http.StatusInternalServerError {
			s.log.Warn("page post", "channel", ch, "err", err)
		}
		s.render(w, code, "post", postForm{Channel: ch, Text: text, ReplyTo: replyTo, To: to, Agents: s.pageAgents(), Error: shown(code, err)})
		return
	}
	s.render(w, http.StatusOK, "post", postForm{Channel: ch, Agents: s.pageAgents()})
}

// postForm is the post box: empty after a post, kept with the error after
// a refusal.
type postForm struct {
	Channel, Text, Error string
	// ReplyTo is the id of the message the post answers, with its sender
	// and the start of its text to show; "": a new thread.
	ReplyTo, ReplyFrom, ReplyText string
	// To is the addressee ("": everyone); Agents, those the box offers
	// (the who board's).
	To     string
	Agents []string
}

// pageAgents is the agents the post box offers to address: the who
// board's (one heartbeat file each), at most pageChannels.
func (s *Server) pageAgents() []string {
	who, err := s.Who(context.Background())
	if err != nil {
		s.log.Warn("page: who", "err", err)
		return nil
	}
	var out []string
	for _, a := range who[:min(len(who), pageChannels)] {
		out = append(out, a.Agent)
	}
	return out
}

// render writes one template as HTML.
func (s *Server) render(w http.ResponseWriter, code int, name string, data any) {
	var b bytes.Buffer
	if err := pageTemplates.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Warn("render page", "template", name, "err", err)
		http.Error(w, "could not render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// pageMessages is the page of channel ch before id before ("": the
// newest), at most n long, as the page shows it to person, and the id to
// ask the next older page with ("": none). It is Server.Messages (the same
// views, the same bounds), keeping each message for what the page shows
// beyond the view (a question's options).
func (s *Server) pageMessages(ch, before string, n int, person string) ([]messageView, string, error) {
	got, err := s.svc.Read(context.Background(), service.ReadRequest{Channel: ch, Before: before, Limit: n})
	if err != nil {
		return nil, "", err
	}
	msgs := got.Messages
	out := make([]messageView, len(msgs))
	budget := maxDelivery
	for i := len(msgs) - 1; i >= 0; i-- {
		v := s.view(ch, &msgs[i])
		if budget > 0 && !delivery.IsNotice(&msgs[i]) {
			budget--
			s.withDelivery(&v, ch, &msgs[i])
		}
		out[i] = s.pageView(v, &msgs[i], person)
	}
	older := ""
	if len(msgs) == n && n > 0 {
		older = msgs[0].Key()
	}
	return out, older, nil
}

// extNeedsInput is the metadata extension of a watcher's reply that asks
// its sender a question: {"job", "options", "allow"} (see package
// watcher). The asker answers with a reply to it.
const extNeedsInput = "needs_input"

// pageView is how the page shows v (the view of m) to person: a question
// to person gets its options as buttons.
func (s *Server) pageView(v MessageView, m *channel.Message, person string) messageView {
	pv := messageView{MessageView: v,
		Stamp: v.Time.UTC().Format(time.RFC3339), When: v.Time.UTC().Format("2006-01-02 15:04:05")}
	if v.Type != "" && v.Type != "chat" {
		pv.Kind = v.Type
	}
	if v.Code != nil {
		pv.CodeText = *v.Code
	}
	pv.Mark, pv.Forged = mark(s.cfg.Verifier, v.From, v.Verdict)
	if n, err := channel.ParseID(v.InReplyTo); err == nil {
		pv.ReplyTo = n.Agent
	}
	if v.Thread != v.ID && v.InReplyTo != "" {
		pv.ThreadOf = v.Thread
	}
	if v.NeedsInput != nil && m.To == person {
		pv.Options = v.NeedsInput.Options
	}
	pv.Body = segments(v.Text)
	pv.Lines = strings.Count(v.Text, "\n") + 1
	if pv.Lines > foldLines || len(v.Text) > foldBytes {
		pv.Fold = snippet(v.Text)
	}
	if v.Delivery != nil {
		for _, a := range v.Delivery.Addressees {
			pv.Delivered = append(pv.Delivered, a.Agent+": "+a.State)
		}
	}
	return pv
}

// mark is the tag 'collab read' shows after the sender of a message that
// does not verify (signing.Verifier.Mark), and whether it is a forgery;
// verdict is a signing.Verdict's text.
func mark(v *signing.Verifier, from, verdict string) (string, bool) {
	vd, ok := signing.ParseVerdict(verdict)
	if !ok {
		return "(" + strings.ReplaceAll(verdict, "-", " ") + ")", false
	}
	return v.Mark(from, vd)
}

// pageChannels lists the channels, most recently active first
// (Server.Channels), at most pageChannels.
func (s *Server) pageChannels() ([]channelItem, error) {
	chans, err := s.Channels()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]channelItem, 0, min(len(chans), pageChannels))
	for _, c := range chans[:min(len(chans), pageChannels)] {
		out = append(out, channelItem{Name: c.Name, Active: c.NewestTime, newest: c.Newest})
	}
	return out, nil
}
