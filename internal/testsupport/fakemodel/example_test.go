package fakemodel_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// A test queues the model's answers, lets the CLI (here a plain HTTP
// client) talk to the server, then reads what was sent.
func Example() {
	srv := fakemodel.Start(nil) // in a test: fakemodel.Start(t)
	defer srv.Close()
	srv.Next(fakemodel.Text("Hello from the fake."))

	ask := func(prompt string) string {
		body := `{"model":"claude-x","messages":[{"role":"user","content":` + fmt.Sprintf("%q", prompt) + `}]}`
		resp, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		var msg struct {
			Content []struct{ Text string } `json:"content"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
			return err.Error()
		}
		return msg.Content[0].Text
	}
	fmt.Println(ask("Hi?"))
	fmt.Println(ask("And now?\nmore lines")) // nothing queued: Echo answers
	for _, r := range srv.Requests() {
		fmt.Printf("%d %s %s %q\n", r.Seq, r.API, r.Model, r.Prompt())
	}
	// Output:
	// Hello from the fake.
	// echo: And now?
	// 1 anthropic claude-x "Hi?"
	// 2 anthropic claude-x "And now?\nmore lines"
}
