package codex

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

func TestModel(t *testing.T) {
	home := t.TempDir()
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, config, model, want string
	}{
		{"adapter's", `model = "gpt-5"`, "o3", "o3"},
		{"config's", "# mine\nmodel = \"gpt-5-codex\" # default\n[features]\nplugins = false\n", "", "gpt-5-codex"},
		{"only top level", "[profiles.x]\nmodel = \"o3\"\n", "", ""},
		{"none", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write(tt.config)
			a := &Adapter{Model: tt.model, environ: []string{"HOME=/nowhere"}}
			if got := a.model([]string{"CODEX_HOME=" + home}); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The parser's Model names the model of the usage Codex reports.
func TestParseModel(t *testing.T) {
	out := []byte(`{"type":"thread.started","thread_id":"01a2018f-7a29-7411-a474-d826ea82ed17"}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"hi"}}
{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":60,"output_tokens":7}}
`)
	resp, err := modelcli.ParseOutput(&Parser{Model: "gpt-5"}, out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (modelcli.Usage{Input: 40, CacheRead: 60, Output: 7, Model: "gpt-5"}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	if got := resp.Usage.Tokens(); got != 107 {
		t.Errorf("tokens %d, want 107", got)
	}
}
