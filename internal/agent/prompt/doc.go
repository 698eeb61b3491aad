// Package prompt builds the text a watcher gives its model CLI for one
// message: who the agent is, its role, its memory files, the recent
// transcript, the message to answer and a few rules for the answer (seed
// 002's "build prompt with role and guardrails"). The model's standard output
// becomes the reply, so the prompt is the whole interface between collab and
// the model.
//
// A prompt is a Go [text/template] executed with a [Data]. [Default] is the
// built-in template (default.tmpl in this package's source); users replace
// it with --prompt-template FILE, read by [Load]. A good start for one's own
// template is a copy of the default, from [Template.Text].
//
// # Data
//
// The template's dot is a [Data]:
//
//	.Agent, .Channel, .Host   who answers, in which channel, on which host
//	.Role                     the role text ("" if none)
//	.Memory                   []Memory: .Path, .Text, .Size, .Truncated, .Err
//	.Tasks                    []Task: the agent's claimed, unfinished tasks
//	                          in .Channel (LoadTasks): .ID, .Title, and the
//	                          newest checkpoint's .Checkpoint, .Type, .Time
//	                          and .Files ("" when none yet)
//	.Transcript               []Message before .Message, oldest first
//	.Message                  the Message to answer
//	.MaxHops                  the watcher's hop limit (0: unknown or none)
//	.Now                      when the prompt is built
//	.NoReply                  what to print to post nothing ("NO_REPLY")
//
// A [Message] is a channel.Message and what the watcher found of its
// sender: .Verdict, the check of its signature ("verified", "unsigned",
// "unknown-key", "bad-signature", "revoked-key"; "" when not checked),
// .Forged (it is not from whom it names), and .LooksLike, the agent with
// keys whose name .From passes for ("Alice" for alice; "" if none).
// {{.Sender $.Agent}} names the sender with all of that: "alice
// (verified)", "bob (unsigned)", "codex (you, verified)", "alice
// (unsigned; FORGED)", "Alice (unsigned; NOT the keyed agent alice)". The
// default template shows it for every message, so that the model can tell
// who verifiably spoke; a template that shows .From alone hides it.
//
// A channel.Message has .ID, .From, .To ("all" for everyone), .Type
// ("chat", "task_assign", …), .Time (a time.Time, UTC), .Content.Text,
// .Content.Code (a *string: test it with {{with}} before use),
// .Metadata.InReplyTo, .Metadata.Hops (reply-chain depth: 0 for a message a
// person wrote, n+1 for a reply to a message at depth n) and
// .Metadata.Thread.
//
// # Functions
//
// Besides text/template's built-ins (and, or, not, len, index, printf, eq,
// lt, …) a template can call:
//
//	trim S            S without leading and trailing white space
//	clip N S          S cut to at most N bytes on a UTF-8 boundary; a cut
//	                  S ends with a line "[… K more bytes not shown]"
//	fence S           S as a Markdown code block, its fence of backticks
//	                  longer than any run of backticks in S
//	quote S           every line of S prefixed with "> " (a Markdown quote)
//	indent N S        every non-empty line of S prefixed with N spaces
//	                  (N at most 100)
//	time LAYOUT T     T in UTC, formatted with a Go time layout such as
//	                  "2006-01-02 15:04:05"
//
// Arguments of type string also take a *string (such as .Content.Code),
// which must not be nil.
//
// # Message text is data
//
// Message text, code and memory files were written by others. Rendering
// never interprets them: they are values put into the template, never parsed
// as template text, and nothing is executed (this package uses only
// text/template and reads only the memory files). The default template shows
// them inside a fence or a quote, so that no message can pass for the
// prompt's own framing, and tells the model that nothing in them changes its
// instructions. That makes a confused model less likely; it is not a
// security boundary.
//
// Render cleans what it is given: the messages' one-line fields (ID, From,
// To, Type, Metadata.InReplyTo and Metadata.Thread) have line breaks and
// other control characters replaced by spaces and are cut to 200 bytes, so
// that a foreign writer's "from" cannot add lines to the prompt; and the
// rendered prompt is valid UTF-8 (invalid bytes become U+FFFD) without NUL
// bytes, so it can always be passed as a command-line argument.
//
// # Size
//
// The claimed tasks are read fresh for every prompt too, at most
// [MaxTasks] of them, each checkpoint's text at most [TaskCheckpointSize]
// bytes. Each memory file is read fresh for every prompt, at most
// [DefaultMemoryBytes] of it unless the caller asks otherwise. The default
// template shows at most 4 KiB of each transcript message's text and code
// and 64 KiB of the answered message's. Whatever the template, the watcher
// passes the transcript through [CutContext] ([ContextMessageBytes] a
// message, [ContextBytes] in all). A rendered prompt larger than
// [MaxSize] is an error, whatever the template. Note that Linux limits one
// command-line argument to 128 KiB: give large prompts to the CLI on
// standard input.
//
// # Errors
//
// [Parse] reports syntax errors with the template's name and line. It then
// renders the template once with sample data, so that a misspelt field or
// function is reported at start-up rather than at the first message. A
// template can still fail on real data ({{clip 9 .Message.Content.Code}}
// with no code, say); [Template.Render] then returns an error naming the
// line and column, and the watcher logs it. A template that renders only
// white space is an error too. A [Template] is safe for concurrent use.
package prompt
