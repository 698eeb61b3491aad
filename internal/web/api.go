package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
)

// Bounds of the API's reads.
const (
	// DefaultPage and MaxPage are a message page's default and largest
	// length.
	DefaultPage = 50
	MaxPage     = 200
	// maxDelivery is how many addressed messages of a page (the newest)
	// get their delivery status: each costs a handful of file reads.
	maxDelivery = 50
)

// routeAPI adds the JSON API's routes to mux.
func (s *Server) routeAPI(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/session", s.apiSession)
	mux.HandleFunc("GET /api/channels", s.apiChannels)
	mux.HandleFunc("GET /api/channels/{channel}/messages", s.apiMessages)
	mux.HandleFunc("POST /api/channels/{channel}/messages", s.apiPost)
	mux.HandleFunc("GET /api/channels/{channel}/events", s.apiEvents)
	mux.HandleFunc("GET /api/who", s.apiWho)
	mux.HandleFunc("GET /api/status/{id}", s.apiStatus)
	mux.HandleFunc("GET /api/agents/{agent}/jobs", s.apiJobs)
	mux.HandleFunc("GET /api/agents/{agent}/jobs/{job}", s.apiJob)
	mux.HandleFunc("GET /api/agents/{agent}/jobs/{job}/events", s.apiJobEvents)
	s.routeWorkAPI(mux)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, http.StatusNotFound, "no such API endpoint")
	})
}

// apiSession answers who the session posts as.
func (s *Server) apiSession(w http.ResponseWriter, r *http.Request) {
	p := personOf(r)
	signs := p == s.cfg.Person && s.cfg.Signer != nil
	writeJSON(w, http.StatusOK, map[string]any{"person": p, "signs": signs})
}

// ChannelView is one channel in GET /api/channels.
type ChannelView struct {
	Name string `json:"name"`
	// Newest and NewestTime are the newest message's id and time; empty
	// for a channel without messages.
	Newest     string    `json:"newest,omitempty"`
	NewestTime time.Time `json:"newest_time,omitzero"`
}

// Channels lists the tree's channels, the most recently active first. Its
// cost is one listing of each channel's folder (channel.Tail of 1), not
// its messages.
func (s *Server) Channels() ([]ChannelView, error) {
	entries, err := os.ReadDir(s.cfg.Root.Channels())
	if err != nil {
		return nil, err
	}
	out := []ChannelView{}
	for _, e := range entries {
		if !e.IsDir() || !tree.ValidName(e.Name()) {
			continue
		}
		v := ChannelView{Name: e.Name()}
		if msgs, _, err := channel.Tail(s.cfg.Root, e.Name(), "", 1); err == nil && len(msgs) == 1 {
			v.Newest, v.NewestTime = msgs[0].Key(), msgs[0].Time()
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b ChannelView) int {
		if c := b.NewestTime.Compare(a.NewestTime); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func (s *Server) apiChannels(w http.ResponseWriter, r *http.Request) {
	chs, err := s.Channels()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"channels": chs})
}

// MessageView is a message as the API and the page show it.
type MessageView struct {
	ID        string    `json:"id"`
	Channel   string    `json:"channel"`
	Time      time.Time `json:"time"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Type      string    `json:"type"`
	Text      string    `json:"text"`
	Code      *string   `json:"code,omitempty"`
	InReplyTo string    `json:"in_reply_to,omitempty"`
	Thread    string    `json:"thread,omitempty"`
	Host      string    `json:"host,omitempty"`
	// Artifacts are the files the message refers to (content.artifacts,
	// read liberally: channel.Content.ArtifactList); not in the tree.
	Artifacts []channel.Artifact `json:"artifacts,omitempty"`
	// Verdict is the signature's: verified, unsigned, bad-signature,
	// unknown-key or revoked-key.
	Verdict string `json:"verdict"`
	// Delivery is where an addressed message stands for each addressee;
	// nil for a broadcast and for the older messages of a page (see
	// maxDelivery).
	Delivery *delivery.Status `json:"delivery,omitempty"`
	// NeedsInput is the question a watcher's reply asks its addressee
	// (the message's text), with the answers it takes; nil when the
	// message asks nothing. Answer with a post of one option, reply_to
	// this message's id and to its sender, as the page's buttons do.
	NeedsInput *NeedsInput `json:"needs_input,omitempty"`
}

// NeedsInput is a message's needs_input extension as the API shows it.
type NeedsInput struct {
	Job string `json:"job,omitempty"`
	// Options are the answers it takes: its own, or allow and deny when
	// it asks for a permission (Allow, the tools it would allow).
	Options []string `json:"options"`
	Allow   []string `json:"allow,omitempty"`
}

// needsInput reads m's needs_input extension; nil when it has none or
// it does not parse.
func needsInput(m *channel.Message) *NeedsInput {
	raw, ok := m.Metadata.Extra[extNeedsInput]
	if !ok {
		return nil
	}
	var q NeedsInput
	if json.Unmarshal(raw, &q) != nil {
		return nil
	}
	if len(q.Options) == 0 && len(q.Allow) > 0 {
		q.Options = []string{"allow", "deny"}
	}
	if q.Options == nil {
		q.Options = []string{}
	}
	return &q
}

// view makes m's view, with its verdict. Its host and question are
// shown only as its sender signed them (channel.Message.Trusted).
func (s *Server) view(ch string, m *channel.Message) MessageView {
	t := m.Trusted()
	return MessageView{
		ID: m.Key(), Channel: ch, Time: m.Time(), From: m.From, To: m.To, Type: m.Type,
		Text: m.Content.Text, Code: m.Content.Code, InReplyTo: m.Metadata.InReplyTo,
		Thread: m.ThreadID(), Host: t.Metadata.Host, Artifacts: m.Content.ArtifactList(),
		Verdict:    m.Verify(s.cfg.Verifier, ch).String(),
		NeedsInput: needsInput(&t),
	}
}

// withDelivery adds the delivery status of an addressed message.
func (s *Server) withDelivery(v *MessageView, ch string, m *channel.Message) {
	st := s.svc.Delivery(context.Background(), ch, m)
	if !st.Broadcast {
		v.Delivery = &st
	}
}

// Page is one page of a channel's messages.
type Page struct {
	Messages []MessageView `json:"messages"` // oldest first
	// Before is the id to ask the next older page with; empty when this
	// page is the oldest.
	Before string `json:"before,omitempty"`
}

// Messages returns the page of channel ch before message id before (the
// newest when ""), at most n long. Its cost follows n, plus a delivery
// status for at most maxDelivery messages.
func (s *Server) Messages(ctx context.Context, ch, before string, n int) (Page, error) {
	got, err := s.svc.Read(ctx, service.ReadRequest{Channel: ch, Before: before, Limit: n})
	if err != nil {
		return Page{}, err
	}
	msgs := got.Messages
	p := Page{Messages: make([]MessageView, len(msgs))}
	budget := maxDelivery
	for i := len(msgs) - 1; i >= 0; i-- {
		p.Messages[i] = s.view(ch, &msgs[i])
		if budget > 0 && !delivery.IsNotice(&msgs[i]) {
			budget--
			s.withDelivery(&p.Messages[i], ch, &msgs[i])
		}
	}
	if len(msgs) == n && n > 0 {
		p.Before = msgs[0].Key()
	}
	return p, nil
}

func (s *Server) apiMessages(w http.ResponseWriter, r *http.Request) {
	ch, ok := s.channelArg(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	n := DefaultPage
	if l := q.Get("limit"); l != "" {
		var err error
		if n, err = strconv.Atoi(l); err != nil || n < 1 || n > MaxPage {
			refuse(w, r, http.StatusBadRequest, fmt.Sprintf("limit must be 1 to %d", MaxPage))
			return
		}
	}
	before := q.Get("before")
	if before != "" {
		if _, err := channel.ParseID(before); err != nil {
			refuse(w, r, http.StatusBadRequest, fmt.Sprintf("before %q is not a message id", before))
			return
		}
	}
	p, err := s.Messages(r.Context(), ch, before, n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// PostRequest is the body of POST /api/channels/NAME/messages.
type PostRequest struct {
	Text    string `json:"text"`
	To      string `json:"to"`       // an agent, NAME@INSTANCE, or "all" (the default)
	ReplyTo string `json:"reply_to"` // the id of the message this answers
}

// Post posts text to channel ch as person, a person (hops 0), signed
// with the server's key for that person when it holds one; the rules are
// the service's (service.PostRequest).
func (s *Server) Post(ctx context.Context, ch, person string, req PostRequest) (*channel.Message, error) {
	signer := s.cfg.Signer
	if person != s.cfg.Person {
		signer = nil
		if s.cfg.SignerFor != nil {
			var err error
			if signer, err = s.cfg.SignerFor(person); err != nil {
				return nil, fmt.Errorf("the key of %s: %w", person, err)
			}
		}
	}
	res, err := s.svc.Post(ctx, service.Actor{Name: person, Signer: signer, Hops: -1},
		service.PostRequest{Channel: ch, To: req.To, Text: req.Text, InReplyTo: req.ReplyTo})
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		s.log.Warn("posted with a warning", "id", res.Message.ID, "warning", w)
	}
	return &res.Message, nil
}

func (s *Server) apiPost(w http.ResponseWriter, r *http.Request) {
	ch, ok := s.channelArg(w, r)
	if !ok {
		return
	}
	var req PostRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			refuse(w, r, http.StatusRequestEntityTooLarge, "request body too large")
			return
		}
		refuse(w, r, http.StatusBadRequest, "bad JSON body: "+err.Error())
		return
	}
	m, err := s.Post(r.Context(), ch, personOf(r), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := s.view(ch, m)
	s.withDelivery(&v, ch, m)
	writeJSON(w, http.StatusCreated, v)
}

// AgentView is one agent on the who board.
type AgentView struct {
	Agent string `json:"agent"`
	// Address is how people name the agent: NAME@INSTANCE for an agent
	// of a workflow instance (workflow.Address), else its id.
	Address          string    `json:"address"`
	State            string    `json:"state"` // as who shows it: AWAKE/IDLE, STALE, OFFLINE, …
	Host             string    `json:"host,omitempty"`
	Channels         []string  `json:"channels,omitempty"`
	Time             time.Time `json:"time,omitzero"` // the last heartbeat
	Backlog          int       `json:"backlog,omitempty"`
	OldestUnanswered string    `json:"oldest_unanswered,omitempty"`
	LastReply        string    `json:"last_reply,omitempty"`
	Working          string    `json:"working_on,omitempty"`
	Verdict          string    `json:"verdict"` // the heartbeat's signature
}

// Who returns the presence board: the agents with a heartbeat.
func (s *Server) Who(ctx context.Context) ([]AgentView, error) {
	rows, err := s.svc.Who(ctx, service.WhoRequest{})
	if err != nil {
		return nil, err
	}
	out := make([]AgentView, 0, len(rows))
	for _, r := range rows {
		st := r.Status
		if st == nil {
			continue
		}
		v := AgentView{Agent: r.Agent, Address: workflow.Address(r.Agent), State: r.State,
			Host: st.Host, Channels: st.Channels, Backlog: st.Backlog, OldestUnanswered: st.OldestUnanswered,
			LastReply: st.LastReply, Working: st.MessageID, Verdict: r.Verdict.String()}
		if len(v.Channels) == 0 && st.Channel != "" {
			v.Channels = []string{st.Channel}
		}
		v.Time, _ = st.Time()
		out = append(out, v)
	}
	return out, nil
}

func (s *Server) apiWho(w http.ResponseWriter, r *http.Request) {
	agents, err := s.Who(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": agents})
}

// apiStatus answers where message ID stands (?channel=C, else found).
func (s *Server) apiStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.svc.Status(r.Context(), service.StatusRequest{Channel: r.URL.Query().Get("channel"), ID: r.PathValue("id")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// channelArg returns the request's valid channel name, or answers 400.
func (s *Server) channelArg(w http.ResponseWriter, r *http.Request) (string, bool) {
	ch := r.PathValue("channel")
	if err := tree.CheckName("channel", ch); err != nil {
		refuse(w, r, http.StatusBadRequest, err.Error())
		return "", false
	}
	return ch, true
}

// fail answers an error of the service layer with the HTTP status of its
// kind (see package service), and its text; an error without a kind, or
// of kind Failed, answers 500 and is logged: the client is told nothing
// of it (it often names a path on the server's host).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := httpStatus(err)
	if code == http.StatusInternalServerError {
		s.log.Error("request failed", "path", r.URL.Path, "err", err)
	}
	refuse(w, r, code, err.Error())
}

// httpStatus is the web door's one mapping of the service layer's error
// kinds to HTTP statuses (the table in package service's doc); 500 when
// the kind is Failed. A message too large is 413, a request whose client
// went away 503.
func httpStatus(err error) int {
	switch {
	case errors.Is(err, channel.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	}
	switch errkind.Of(err) {
	case errkind.Invalid:
		return http.StatusBadRequest
	case errkind.NotFound:
		return http.StatusNotFound
	case errkind.Timeout:
		return http.StatusGatewayTimeout
	case errkind.Conflict:
		return http.StatusConflict
	case errkind.Forbidden:
		return http.StatusForbidden
	case errkind.Queued:
		return http.StatusAccepted
	case errkind.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
