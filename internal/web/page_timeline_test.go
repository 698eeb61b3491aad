package web_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
)

// TestPageMessageTimeline: the message page draws a bar per addressee, a
// segment per step (each named by the stage it reaches), and lists the
// stages; what the files say is escaped; a bad id or channel is 400,
// a missing message 404; the channel page links each addressed message
// to its page.
func TestPageMessageTimeline(t *testing.T) {
	root := tree.Root(t.TempDir())
	f := newReviewFlow(t, root)
	c, base := signedIn(t, web.Config{Root: root})
	page := getPage(t, c, base+web.MessageURL(f.Channel, f.Asked.ID))
	segs := regexp.MustCompile(`<g class="seg" data-stage="([a-z_]+)">`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, s := range segs {
		got = append(got, s[1])
	}
	if !slices.Equal(got, askedStages[1:]) {
		t.Errorf("segments %v, want %v", got, askedStages[1:])
	}
	rows := regexp.MustCompile(`<tr data-stage="([a-z_]+)">`).FindAllStringSubmatch(page, -1)
	if len(rows) != len(askedStages) {
		t.Errorf("%d stage rows, want %d", len(rows), len(askedStages))
	}
	for _, want := range []string{`aria-label="reviewer@pr7: 8 stages from sent to reply_seen in 35.3s"`, "fsnotify", "build-2", `data-state="answered"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if channelPage := getPage(t, c, base+"/c/"+f.Channel); !strings.Contains(channelPage, `href="`+web.MessageURL(f.Channel, f.Asked.ID)+`"`) {
		t.Error("the channel page does not link the message's page")
	}
	for _, u := range []string{"/c/" + f.Channel + "/m/not-an-id", "/c/..bad/m/" + f.Asked.ID} {
		if resp, err := c.Get(base + u); err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: %v %v, want 400", u, resp.StatusCode, err)
		}
	}
	if resp, err := c.Get(base + web.MessageURL("elsewhere", f.Asked.ID)); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("a message not in the channel: %v %v, want 404", resp.StatusCode, err)
	}
}

// TestPageWorkflowSequence: the instance page draws a lifeline per agent
// and an arrow per message and addressee, every text escaped; the
// workflows page links the instance; an unknown instance is 404.
func TestPageWorkflowSequence(t *testing.T) {
	root := tree.Root(t.TempDir())
	f := newReviewFlow(t, root)
	c, base := signedIn(t, web.Config{Root: root})
	if list := getPage(t, c, base+"/workflows"); !strings.Contains(list, `href="/workflows/review@pr7"`) {
		t.Error("the workflows page does not link the instance")
	}
	page := getPage(t, c, base+"/workflows/review@pr7")
	lanes := regexp.MustCompile(`<g class="lane" data-agent="([^"]+)">`).FindAllStringSubmatch(page, -1)
	var names []string
	for _, l := range lanes {
		names = append(names, l[1])
	}
	if want := []string{"ann", flowCoder, flowReviewer}; !slices.Equal(names, want) {
		t.Errorf("lanes %v, want %v", names, want)
	}
	if n := strings.Count(page, `<g class="msg-row"`); n != len(f.Msgs) {
		t.Errorf("%d rows, want %d", n, len(f.Msgs))
	}
	if n := strings.Count(page, `class="arrow"`); n != len(f.Msgs)-1 {
		t.Errorf("%d arrows, want %d (the broadcast is a line)", n, len(f.Msgs)-1)
	}
	if n := strings.Count(page, `<line class="broadcast"`); n != 1 {
		t.Errorf("%d broadcast lines, want 1", n)
	}
	if strings.Contains(page, "<b>") || !strings.Contains(page, "TTL. &lt;b") {
		t.Error("a message's text is not escaped in the chart")
	}
	if resp, err := c.Get(base + "/workflows/nope@x"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown instance: %v %v, want 404", resp.StatusCode, err)
	}
}
