package worktree_test

import (
	"fmt"

	"github.com/collabdev/collab/internal/workspace/worktree"
)

func ExampleBranchName() {
	taken := map[string]bool{"add-a-changelog": true}
	fmt.Println(worktree.BranchName("", "Add a changelog", func(name string) bool { return taken[name] }))
	fmt.Println(worktree.DefaultPath("", "/src/shop", "feature/login"))
	// Output:
	// add-a-changelog-2
	// /src/.collab-worktrees/shop/feature-login
}
