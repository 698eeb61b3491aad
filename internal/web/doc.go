// Package web serves the shared tree to people: a page app and a JSON API
// under /api/ with server-sent events, behind a sign-in.
//
// # Safety
//
// Every request must name this server in its Host (its address and port,
// localhost on loopback, or one of Config.Hosts: host.go), else 421, and
// needs a session or a bearer token: a person's, or at /mcp, which takes
// nothing else, an agent's (see mcp.go). A session comes from a one-time
// sign-in token (printed by `collab serve` in a URL, single use, for
// Config.SignInTTL; Server.NewSignIn replaces it, as collab serve does on
// SIGHUP) exchanged at GET /signin, or from a person's token typed into
// the sign-in page's form (POST /signin; an agent's is refused, and each
// client address has a few failed tries, then 429: ratelimit.go), for a
// session cookie (HttpOnly, SameSite=Strict; under TLS Secure with the
// __Host- prefix). The cookie's name carries the server's random id,
// since cookies do not isolate ports: a cookie of another server on the
// host is never read, and a cookie's value is only ever looked up as a
// session id, never as a token. Sessions live in memory only, end after
// SessionIdle unused or SessionMax, or at POST /signout (the page's Sign
// out); a restart signs everyone out. A request without a session gets
// 401: JSON {"error"} under /api/, a plain sign-in page with the token
// form elsewhere. A 500 says only "internal error": the detail goes to
// the log. Every response carries a strict
// Content-Security-Policy (no inline script), nosniff and no-referrer; a
// POST whose Sec-Fetch-Site or Origin names another site is refused with
// 403; request bodies are limited (MaxBody); server-sent event streams
// are bounded in all and per person (MaxStreams, MaxStreamsPerPerson; 503
// naming the cap beyond), every event is framed by one writer that no
// text can add a field through, and a Last-Event-ID counts only when it
// is a position the server gave (sse.go, events.go).
//
// # Unread counts
//
// The channel list shows each signed-in person's unread count per
// channel: others' messages after a "last seen" cursor, the ids of the
// newest second the page showed that person there (viewing a channel
// and its live stream move it forward only). Cursors are kept in
// ROOT/state/PERSON/web-seen.json, replaced atomically; the inbox package's
// cursors are not reused, as they are an agent's delivery position, not
// what a person looked at. A count reads no message: it is one listing
// of the channel's names, skipped when the channel's newest message is
// within the cursor, and shows at most "99+" (see seen.go).
//
// The page routes (page.go, templates/, static/) are filled by the page
// code; this file's siblings are the server, auth, API and events.
package web
