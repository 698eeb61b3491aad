package claude

import (
	"slices"
	"strings"
)

// BuiltinTools are the built-in tools of Claude Code that collab knows
// (those its 2.x releases list in system/init, and older names): what
// [ToolArgs] denies when a list leaves them out.
var BuiltinTools = []string{
	"Agent", "AskUserQuestion", "Bash", "BashOutput", "CronCreate", "CronDelete", "CronList",
	"Edit", "EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob", "Grep",
	"KillShell", "LSP", "ListMcpResourcesTool", "Monitor", "MultiEdit", "NotebookEdit",
	"NotebookRead", "PowerShell", "PushNotification", "Read", "ReadMcpResourceTool",
	"RemoteTrigger", "ReportFindings", "ScheduleWakeup", "SendMessage", "Skill", "SlashCommand",
	"Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate",
	"TodoWrite", "ToolSearch", "WebFetch", "WebSearch", "Workflow", "Write",
}

// ToolLimits is what [ToolArgs] cannot restrict, for a warning.
const ToolLimits = "--allowedTools only adds to what Claude Code may use, so the other built-in tools collab knows are denied with --disallowedTools; a built-in tool newer than collab's list is not denied"

// ToolArgs returns the arguments (for Adapter.Args) that restrict Claude
// Code to tools, each a tool's name or a permission rule such as
// "Bash(git diff:*)": --allowedTools with each (they run without asking)
// and --disallowedTools with every tool of [BuiltinTools] that no entry
// names (a rule names its tool: Bash stays, only what the rule allows runs
// unasked, and the permission mode denies the rest). nil when tools is
// empty. Each list flag is followed by another option or by nothing, and
// a tool is never an option: the caller refuses entries starting with
// '-'.
func ToolArgs(tools []string) []string {
	if len(tools) == 0 {
		return nil
	}
	named := map[string]bool{}
	for _, t := range tools {
		name, _, _ := strings.Cut(t, "(")
		named[strings.TrimSpace(name)] = true
	}
	args := append([]string{"--allowedTools"}, tools...)
	var deny []string
	for _, t := range BuiltinTools {
		if !named[t] {
			deny = append(deny, t)
		}
	}
	if len(deny) > 0 {
		args = append(args, "--disallowedTools")
		args = append(args, slices.Clip(deny)...)
	}
	return args
}
