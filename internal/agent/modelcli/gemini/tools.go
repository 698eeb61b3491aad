package gemini

// ToolLimits is what Gemini CLI cannot restrict of a list of tools, for
// a warning: its built-in tools are chosen in settings.json
// (tools.core, tools.exclude), not by a flag, and the adapter does not
// touch settings.
const ToolLimits = "Gemini CLI has no flag that takes a built-in tool away (that is settings.json's tools.core and tools.exclude): the tools listed run without asking (--allowed-tools), and the read-only tools and file edits of its approval mode (auto_edit) stay available"

// ToolArgs returns the arguments (for Adapter.Args) that let the tools
// run without asking: --allowed-tools with each; nil when tools is
// empty. The caller refuses entries starting with '-'.
func ToolArgs(tools []string) []string {
	if len(tools) == 0 {
		return nil
	}
	return append([]string{"--allowed-tools"}, tools...)
}
