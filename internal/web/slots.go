package web

import "sync"

// slots bounds what is in progress at once (open event streams, /mcp
// requests), in total and per holder (a person, a token), so one holder
// cannot take every slot.
type slots struct {
	total, each int // the caps: in all, per holder

	mu   sync.Mutex
	n    int            // slots taken
	held map[string]int // holder → slots taken
}

// capHit says which cap refused a slot.
type capHit int

const (
	capNone  capHit = iota // a slot was taken
	capEach                // the holder has its cap
	capTotal               // every slot is taken
)

func newSlots(total, each int) *slots {
	return &slots{total: total, each: each, held: map[string]int{}}
}

// take takes a slot for holder and returns how to give it back, or which
// cap refused it (the holder's first: the one its holder can do
// something about).
func (l *slots) take(holder string) (release func(), hit capHit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.held[holder] >= l.each:
		return nil, capEach
	case l.n >= l.total:
		return nil, capTotal
	}
	l.n++
	l.held[holder]++
	var once sync.Once
	return func() { once.Do(func() { l.give(holder) }) }, capNone
}

func (l *slots) give(holder string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.held[holder]--; l.held[holder] <= 0 {
		delete(l.held, holder)
	}
}

// perHolder is the cap per holder when none is set: a quarter of the
// total, at least one.
func perHolder(each, total int) int {
	if each > 0 {
		return each
	}
	return max(1, total/4)
}
