package channel

import (
	"maps"
	"runtime"
	"sync"

	"github.com/collabdev/collab/internal/identity/signing"
)

// VerifyAll checks the signatures of msgs, messages of channel ch, side
// by side, one goroutine per core: a check of a 1 MB message is mostly
// hashing it. With strip it also drops from each signed message the
// fields its signatures do not cover ([Message.StripUnsigned]), which a
// reader would take for the sender's.
func VerifyAll(msgs []Message, v *signing.Verifier, ch string, strip bool) []signing.Verdict {
	out := make([]signing.Verdict, len(msgs))
	workers := min(runtime.GOMAXPROCS(0), len(msgs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(msgs); i += workers {
				out[i] = msgs[i].Verify(v, ch)
				if strip {
					msgs[i].StripUnsigned()
				}
			}
		})
	}
	wg.Wait()
	return out
}

// KeyVerdict is the member [Message.EncodeVerdict] adds.
const KeyVerdict = "verdict"

// EncodeVerdict returns m as JSON with one more member, "verdict", the
// verdict on its signature (one the message itself carries is
// replaced): what collab read --json and wait --json print.
func (m *Message) EncodeVerdict(verdict signing.Verdict) ([]byte, error) {
	if _, ok := m.Extra[KeyVerdict]; ok {
		c := *m
		c.Extra = maps.Clone(m.Extra)
		delete(c.Extra, KeyVerdict)
		m = &c
	}
	data, err := m.Encode()
	if err != nil {
		return nil, err
	}
	v, _ := verdict.MarshalText()
	data = append(data[:len(data)-1], `,"`+KeyVerdict+`":"`...) // an object: ends in '}'
	return append(append(data, v...), `"}`...), nil
}
