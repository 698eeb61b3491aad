package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/mcpserver"
)

// MCP over HTTP (/mcp).
//
// An agent reaches /mcp with its own token (Authorization: Bearer, from
// `collab serve token new --agent NAME [--channel CH]`) and gets the tools
// of `collab mcp` (package mcpserver), acting as the token's agent: no
// argument, header or query names the sender. The channel is the token's;
// a token made without --channel names it in the URL (/mcp?channel=CH), and
// a token with a channel refuses any other. A person's session or token
// does not reach /mcp, and an agent's token reaches nothing else.
//
// The SDK's streamable HTTP handler runs stateless: it keeps no session
// between requests (each POST is answered on its own; GET and DELETE get
// 405), so there is nothing to bound but the POSTs in progress:
// Config.MaxMCP at most, and Config.MaxMCPPerToken of one token's, so that
// one agent's long send_and_wait calls cannot take every slot; 503
// beyond, naming the cap. A request's body (MaxBody at most) is
// read under the server's read timeout; its answer may then take as long
// as send_and_wait may wait (mcpserver.MaxWaitTimeout, plus a minute).
// The tools call the server's service (Config.Service), delegation
// included: on a host with the mount, delegate_to_worktree makes the
// worktree of the repository of the server's working directory and
// starts the agent's watcher detached on this host, with the limits and
// refusals of every door (service.Delegations; the depth of a delegated
// agent is its session's).
//
// What the tools post is signed with the agent's key (Config.AgentSigner),
// loaded when the agent's server is built and kept while the process runs.

// DefaultMaxMCP bounds the /mcp requests in progress when Config.MaxMCP
// is 0.
const DefaultMaxMCP = 32

// maxMCPServers bounds the built servers kept (one per agent and
// channel); beyond it they are built afresh.
const maxMCPServers = 256

type mcpServerKey struct{}

// mcpFace serves /mcp.
type mcpFace struct {
	s     *Server
	h     *mcp.StreamableHTTPHandler
	slots *slots // per token ID

	mu      sync.Mutex
	servers map[[2]string]*mcp.Server // agent, channel → its server
}

func (s *Server) mcpHandler() http.Handler {
	n := s.cfg.MaxMCP
	if n <= 0 {
		n = DefaultMaxMCP
	}
	f := &mcpFace{s: s, slots: newSlots(n, perHolder(s.cfg.MaxMCPPerToken, n)), servers: map[[2]string]*mcp.Server{}}
	f.h = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		srv, _ := r.Context().Value(mcpServerKey{}).(*mcp.Server)
		return srv
	}, &mcp.StreamableHTTPOptions{Stateless: true, Logger: s.log, MaxRequestBodyBytes: MaxBody})
	return f
}

func (f *mcpFace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || secret == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="collab"`)
		refuse(w, r, http.StatusUnauthorized, "no token: /mcp needs Authorization: Bearer TOKEN, from 'collab serve token new --agent NAME'")
		return
	}
	rec, ok := f.s.cfg.Tokens.Find(secret)
	switch {
	case !ok && f.s.auth.session(secret) != "":
		refuse(w, r, http.StatusForbidden, "a person's session does not reach /mcp: use an agent's token")
		return
	case !ok:
		w.Header().Set("WWW-Authenticate", `Bearer realm="collab", error="invalid_token"`)
		refuse(w, r, http.StatusUnauthorized, "unknown or revoked token")
		return
	case !rec.IsAgent():
		refuse(w, r, http.StatusForbidden, "a person's token does not reach /mcp: make an agent's with 'collab serve token new --agent NAME'")
		return
	}
	ch := rec.Channel
	if q := r.URL.Query().Get("channel"); q != "" && q != ch {
		if ch != "" {
			refuse(w, r, http.StatusForbidden, fmt.Sprintf("this token reaches channel %s only", ch))
			return
		}
		ch = q
	}
	if ch == "" {
		refuse(w, r, http.StatusBadRequest, "no channel: this token names none, so the URL must (/mcp?channel=NAME)")
		return
	}
	if err := tree.CheckName("channel", ch); err != nil {
		refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if r.Method == http.MethodPost { // GET and DELETE: 405 at once
		release, hit := f.slots.take(rec.ID)
		switch hit {
		case capEach:
			w.Header().Set("Retry-After", "30")
			refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("too many MCP requests: the per-token limit (%d, --max-mcp-per-token) is reached; try again when one of this token's calls ends", f.slots.each))
			return
		case capTotal:
			w.Header().Set("Retry-After", "30")
			refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("too many MCP requests: the server limit (%d, --max-mcp) is reached; try again later", f.slots.total))
			return
		}
		defer release()
		// The body under the read timeout; then the answer may take
		// as long as send_and_wait.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				refuse(w, r, http.StatusRequestEntityTooLarge, "request body too large")
				return
			}
			refuse(w, r, http.StatusBadRequest, "reading the request: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Now().Add(mcpserver.MaxWaitTimeout + time.Minute))
	}
	srv, err := f.server(rec.Agent, ch)
	if err != nil {
		f.s.log.Warn("mcp server", "agent", rec.Agent, "channel", ch, "err", err)
		refuse(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	f.h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), mcpServerKey{}, srv)))
}

// server returns the MCP server of agent on ch, built on first use.
func (f *mcpFace) server(agent, ch string) (*mcp.Server, error) {
	key := [2]string{agent, ch}
	f.mu.Lock()
	srv := f.servers[key]
	f.mu.Unlock()
	if srv != nil {
		return srv, nil
	}
	cfg := mcpserver.Config{Root: f.s.cfg.Root, Agent: agent, Channel: ch, Hops: -1,
		Logger: f.s.log.With("agent", agent, "channel", ch), Verifier: f.s.cfg.Verifier, Service: f.s.svc}
	cfg.Host, _ = os.Hostname()
	if f.s.cfg.AgentSigner != nil {
		signer, err := f.s.cfg.AgentSigner(agent)
		if err != nil {
			return nil, fmt.Errorf("the key of %s: %w", agent, err)
		}
		cfg.Signer = signer
	}
	ms, err := mcpserver.New(cfg)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.servers) >= maxMCPServers {
		clear(f.servers)
	}
	if srv := f.servers[key]; srv != nil {
		return srv, nil
	}
	f.servers[key] = ms.MCP()
	return ms.MCP(), nil
}
