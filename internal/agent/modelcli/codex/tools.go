package codex

// ToolLimits is what codex exec cannot restrict of a list of tools, for a
// warning: it has no flag or setting that takes a built-in tool away.
const ToolLimits = "codex exec has no flag or setting that limits its tools by name, so tools: is not applied: it runs commands and edits files inside its sandbox (--sandbox workspace-write, no network)"

// ToolArgs returns the arguments that restrict Codex to tools: none
// (see [ToolLimits]).
func ToolArgs(tools []string) []string { return nil }
