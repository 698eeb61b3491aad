package errkind

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

type claimed struct{}

func (claimed) Error() string { return "held by another" }
func (claimed) Kind() Kind    { return Conflict }

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Kind
	}{
		{"plain", errors.New("disk"), Failed},
		{"wrapped", Wrap(Invalid, errors.New("bad name")), Invalid},
		{"deeper", fmt.Errorf("send: %w", New(NotFound, "no channel %q", "x")), NotFound},
		{"outer kind wins", Wrap(Conflict, Wrap(Invalid, errors.New("x"))), Conflict},
		{"kinder", fmt.Errorf("claim: %w", claimed{}), Conflict},
		{"joined", errors.Join(errors.New("a"), Wrap(Forbidden, errors.New("b"))), Forbidden},
		{"not exist", fmt.Errorf("read: %w", fs.ErrNotExist), NotFound},
		{"permission", fs.ErrPermission, Forbidden},
		{"deadline", fmt.Errorf("wait: %w", context.DeadlineExceeded), Timeout},
		{"kind before stdlib", Wrap(Invalid, fs.ErrNotExist), Invalid},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("%s: Of = %v, want %v", tc.name, got, tc.want)
		}
	}
	if Wrap(Invalid, nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	if e := Wrap(Invalid, errors.New("text")); e.Error() != "text" {
		t.Errorf("text %q", e.Error())
	}
	if Kind(42).String() != "Kind(42)" || Queued.String() != "queued" {
		t.Error("String")
	}
}
