package workflow

import "fmt"

// Vars are the values ${{ … }} can name.
type Vars struct {
	Outputs  map[string]string   // setup outputs by `as`
	Env      func(string) string // env.NAME; nil: none is set
	Workflow string              // workflow.name
	Instance string              // workflow.instance
	Channel  string              // context.channel
	Document string              // context.document
}

// Render replaces every ${{ name }} in text with its value, in one pass.
// An unknown name, an unset or empty environment variable or a malformed
// ${{ is an error.
func Render(text string, v Vars) (string, error) {
	return "", fmt.Errorf("workflow: not implemented")
}
