package workflow_test

import (
	"fmt"

	"github.com/collabdev/collab/internal/workflow"
)

func ExampleRender() {
	text, err := workflow.Render("${{ diff }}\n@reviewer please review (${{ workflow.instance }})", workflow.Vars{
		Outputs:  map[string]string{"diff": "+one line"},
		Instance: "pr-123",
	})
	fmt.Println(text, err)
	_, err = workflow.Render("${{ dif }}", workflow.Vars{})
	fmt.Println(err)
	// Output:
	// +one line
	// @reviewer please review (pr-123) <nil>
	// workflow: unknown variable "dif"
}

func ExampleParseAddress() {
	id, _ := workflow.ParseAddress("reviewer@pr-123")
	name, instance, ok := workflow.SplitAgentID(id)
	fmt.Println(id, name, instance, ok)
	// Output: reviewer--pr-123 reviewer pr-123 true
}
