package prompt

import (
	"fmt"
	"strings"
	"testing"
)

// TestCutContext: a 1 MB message in the context is cut with a marker that
// says how much and where to find the rest; the transcript keeps within
// its byte budget whatever the template; the answered message is whole.
func TestCutContext(t *testing.T) {
	const mb = 1 << 20
	code := strings.Repeat("c", 10)
	d := minimalData()
	for i := range 20 {
		d.Transcript = append(d.Transcript, msg(i, "a", "all", strings.Repeat("é", mb/2), &code, 0, ""))
	}
	d.Message = msg(30, "b", "all", strings.Repeat("m", 60<<10), nil, 0, "")
	cut := CutContext(d.Transcript)
	total := 0
	for i, m := range cut {
		total += len(m.Content.Text) + len(*m.Content.Code)
		if !utf8Valid(m.Content.Text) {
			t.Errorf("message %d cut inside a character", i)
		}
		if len(m.Content.Text) > ContextMessageBytes {
			t.Errorf("message %d keeps %d bytes", i, len(m.Content.Text))
		}
	}
	if total > ContextBytes+len(cut)*100 { // markers of messages left no room
		t.Errorf("the context holds %d bytes, budget %d", total, ContextBytes)
	}
	newest := cut[len(cut)-1].Content.Text
	kept := len(newest) - len(newest[strings.LastIndex(newest, "\n[… cut: "):])
	if want := fmt.Sprintf("\n[… cut: %d bytes, see message %s]", mb-kept, d.Transcript[19].ID); !strings.HasSuffix(newest, want) {
		t.Errorf("newest message ends %q, want %q", newest[len(newest)-80:], want)
	}
	if d.Transcript[19].Content.Text != strings.Repeat("é", mb/2) {
		t.Error("CutContext changed its argument")
	}
	// Cutting again keeps the count of the original.
	again := CutContext([]Message{{Message: CutMessage(d.Transcript[19].Message)}})
	if again[0].Content.Text != newest {
		t.Errorf("cut twice:\n%q\nwant\n%q", again[0].Content.Text[ContextMessageBytes-80:], newest[ContextMessageBytes-80:])
	}

	// Any template: the transcript within budget, the message whole.
	tp, err := Parse("all.tmpl", "{{range .Transcript}}{{.Content.Text}}{{end}}\n{{.Message.Content.Text}}")
	if err != nil {
		t.Fatal(err)
	}
	d.Transcript = cut
	out, err := tp.Render(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out, "\n"+d.Message.Content.Text) {
		t.Error("the answered message is not whole")
	}
	if len(out) > ContextBytes+len(cut)*100+len(d.Message.Content.Text)+1 {
		t.Errorf("prompt is %d bytes", len(out))
	}
	// The default template's clip keeps the marker.
	out, err = Default().Render(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "bytes, see message "+d.Transcript[19].ID+"]") || strings.Contains(out, "more bytes not shown") {
		t.Error("the default template hides the cut marker")
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
