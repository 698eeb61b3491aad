// Package fakemodel is a fake model API on 127.0.0.1 for tests that run the
// real model CLIs (Claude Code, Codex CLI, Gemini CLI) offline.
//
// [Start] starts a [Server] speaking just enough of three streaming APIs:
//
//   - Anthropic Messages: POST /v1/messages (SSE when "stream" is true,
//     else one JSON message), POST /v1/messages/count_tokens, and the
//     HEAD / probe Claude Code sends before its first call.
//   - OpenAI Responses: POST /v1/responses (SSE ending in
//     response.completed, else one JSON response), GET /v1/models.
//   - Gemini: POST /v1beta/models/MODEL:streamGenerateContent?alt=sse,
//     :generateContent and :countTokens.
//
// Any other path is answered 404 with a JSON error, and recorded.
//
// # Replies
//
// Each model call (a "turn") takes the next [Reply] queued with
// [Server.Next]; when none is queued, the script set with [Server.Script]
// (or [Server.Always]) decides; without a script, [Echo] answers "echo: "
// and the first line of the prompt, or "tool said: " and the output of a
// tool the CLI just ran. A reply is text ([Text]), one tool call ([Tool],
// [Shell], [ReadFile], [MCPTool], which pick the tool each CLI offers), or an HTTP
// error with the API's own error body ([Error]); [Reply.After] delays it,
// [Reply.Slowly] paces its events, [Reply.Hung] stops it after the first
// chunk until the client goes away or the server closes.
//
// [MCPTool] calls a tool of an MCP server the CLI was given: Claude Code
// offers it as mcp__SERVER__TOOL, Codex in namespace mcp__SERVER (the
// call carries the namespace). For the models it knows, Codex defers MCP
// tools behind its client-side tool_search: the reply is then a
// tool_search_call first, Codex answers it with the tools found (which
// [Request.Namespaces] shows), and the call itself answers that next model
// call, ahead of anything queued.
//
// Every request is recorded, decoded into a normalised [Request] (model,
// system prompt, conversation, tools offered, headers with keys
// redacted): [Server.Requests] returns the turns, [Server.AllRequests]
// everything, [Server.WaitRequests] waits for them. A Server is safe for
// concurrent use.
//
// # Running the CLIs
//
// [Server.CLI] prepares one CLI to talk to the server and to nothing else:
// a fresh HOME (and TMPDIR, XDG folders) under the test's TempDir, the
// settings files, and an environment with the test's own variables less
// every ANTHROPIC_, CLAUDE_, OPENAI_, CODEX_, GEMINI_, GOOGLE_ (…) one and
// any proxy. [CLI.Run] runs it bounded, in a process group, stdin
// /dev/null. The binary is found by [FindCLI]; a test is skipped without
// it, or fails when $COLLAB_TEST_REQUIRE_CLIS is "1".
//
// What each CLI is given, verified with strace to reach nothing but the
// server (no DNS look-up at all):
//
//   - claude: ANTHROPIC_BASE_URL (the server URL, no /v1),
//     ANTHROPIC_API_KEY, ANTHROPIC_MODEL, CLAUDE_CODE_MAX_RETRIES=0 and
//     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (without it Claude Code
//     looks up api.anthropic.com), plus DISABLE_AUTOUPDATER,
//     DISABLE_TELEMETRY and DISABLE_ERROR_REPORTING for good measure.
//   - codex: CODEX_HOME=$HOME/.codex holding a config.toml with a
//     model_provider "fakemodel" (base_url URL/v1, env_key
//     FAKEMODEL_API_KEY, wire_api "responses", no request or stream
//     retries), analytics.enabled=false (else ab.chatgpt.com) and
//     features.plugins=false (else chatgpt.com, github.com,
//     api.github.com). Outside a Git repository `codex exec` still needs
//     --skip-git-repo-check.
//   - gemini: GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL,
//     GEMINI_CLI_TRUST_WORKSPACE=true, GEMINI_CLI_NO_RELAUNCH=true (no
//     second node process), and ~/.gemini/settings.json with API-key auth,
//     folder trust off, privacy.usageStatisticsEnabled=false (else
//     play.googleapis.com), telemetry and auto-update off,
//     general.maxAttempts=1 and model.name (else a routing call comes
//     first).
//
// The CLIs' output formats, exit codes and quirks are written down in
// modelcli/testdata/README.md, next to fixtures recorded from them with
// `go test ./internal/testsupport/fakemodel -run Record -record`.
package fakemodel
