package watchsetup

import (
	"context"
	"errors"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/presence"
)

type downPublisher struct{}

func (downPublisher) PublishMessage(context.Context, *channel.Message) error {
	return errors.New("nats: connection closed")
}
func (downPublisher) PublishPresence(presence.Status) error {
	return errors.New("nats: connection closed")
}

// The watcher's failed publishes count in collab_nats_errors_total.
func TestCountedPublisher(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Prometheus: true, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	p := countedPublisher{downPublisher{}, tel}
	if p.PublishMessage(context.Background(), &channel.Message{}) == nil || p.PublishPresence(presence.Status{}) == nil {
		t.Fatal("the errors were not passed on")
	}
	fams, err := tel.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "collab_nats_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" {
					got[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	if got["publish_message"] != 1 || got["publish_presence"] != 1 {
		t.Errorf("collab_nats_errors_total by op: %v", got)
	}
}
