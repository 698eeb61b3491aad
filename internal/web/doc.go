// Package web serves the shared tree to people: a page app and a JSON API
// under /api/ with server-sent events, behind a sign-in.
//
// # Safety
//
// Every request needs a session: a one-time sign-in token (printed by
// `collab serve` in a URL, single use) is exchanged at /signin for a
// session cookie (HttpOnly, SameSite=Strict, Secure under TLS). Sessions
// live in memory only; a restart signs everyone out. A request without a
// session gets 401: JSON {"error"} under /api/, a plain sign-in page
// elsewhere. Every response carries a strict Content-Security-Policy (no
// inline script), nosniff and no-referrer; a POST whose Sec-Fetch-Site or
// Origin names another site is refused with 403; request bodies are
// limited (MaxBody); server-sent event streams are bounded (MaxStreams,
// 503 beyond it).
//
// The page routes (page.go, templates/, static/) are filled by the page
// code; this file's siblings are the server, auth, API and events.
package web
