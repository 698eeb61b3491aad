package channel_test

import (
	"encoding/json"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
)

func TestVerifyAllAndEncodeVerdict(t *testing.T) {
	msgs := make([]channel.Message, 9)
	for i := range msgs {
		msgs[i] = channel.Message{ID: "m", From: "bob", Content: channel.Content{Text: "hi"}}
	}
	verdicts := channel.VerifyAll(msgs, nil, "dev", true)
	for i, v := range verdicts {
		if v != signing.Unsigned {
			t.Errorf("verdict %d = %v; want unsigned", i, v)
		}
	}
	// A verdict the message carries itself is replaced.
	m := channel.Message{ID: "m", From: "bob", Extra: map[string]json.RawMessage{channel.KeyVerdict: json.RawMessage(`"verified"`)}}
	data, err := m.EncodeVerdict(signing.BadSignature)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("EncodeVerdict = %s: %v", data, err)
	}
	if got["verdict"] != "bad-signature" || got["from"] != "bob" {
		t.Errorf("EncodeVerdict = %s; want bob's message, bad-signature", data)
	}
	if _, ok := m.Extra[channel.KeyVerdict]; !ok {
		t.Error("EncodeVerdict changed the message")
	}
}
