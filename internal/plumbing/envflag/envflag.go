// Package envflag gives pflag flag sets the precedence command-line tools
// share: a flag given on the command line wins, then the first of the
// environment variables it is bound to that is set, then its default.
//
// A flag is bound with FromEnv, which also names its variables in its
// help; Parse parses the arguments and fills each flag not given from its
// variables (a list flag takes a comma-separated value, which replaces
// the default). Alias gives a flag an older second name. Source tells an
// error message where a value came from. Seconds is a duration flag that
// also takes a bare number of seconds.
package envflag

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Annotations on a flag: the variables it falls back to, and after Parse,
// the one its value came from.
const (
	annotEnv     = "envflag-env"
	annotEnvUsed = "envflag-env-used"
)

// FromEnv makes flag name fall back to the first of vars that is set, and
// names them in its help. The flag must exist.
func FromEnv(fs *pflag.FlagSet, name string, vars ...string) {
	f := fs.Lookup(name)
	f.Usage += " (env " + strings.Join(vars, ", then ") + ")"
	if err := fs.SetAnnotation(name, annotEnv, vars); err != nil {
		panic(err) // the flag was just looked up
	}
}

// Alias makes --old a second name of flag name: one value, and name
// counts as given whichever is used.
func Alias(fs *pflag.FlagSet, old, name string) {
	prev := fs.GetNormalizeFunc()
	fs.SetNormalizeFunc(func(f *pflag.FlagSet, n string) pflag.NormalizedName {
		if n == old {
			return pflag.NormalizedName(name)
		}
		return prev(f, n)
	})
	f := fs.Lookup(name)
	f.Usage += " (also --" + old + ")"
}

// Parse parses args, then fills the flags not given from their variables
// (getenv reads them). It returns pflag.ErrHelp for --help, and a
// *UsageError for a bad flag or variable.
func Parse(fs *pflag.FlagSet, args []string, getenv func(string) string) error {
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return err
	}
	if err != nil {
		return &UsageError{fmt.Sprintf("%v (see '%s --help')", err, fs.Name())}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		for _, v := range f.Annotations[annotEnv] {
			val := getenv(v)
			if val == "" {
				continue
			}
			if serr := setValue(f.Value, val); serr != nil {
				err = &UsageError{fmt.Sprintf("%s=%q: %v (see '%s --help')", v, val, serr, fs.Name())}
			}
			f.Annotations[annotEnvUsed] = []string{v}
			return
		}
	})
	return err
}

// A UsageError is a bad flag or variable.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// setValue sets a flag's value from a variable: a list is comma-separated
// and replaces the default.
func setValue(v pflag.Value, s string) error {
	if sv, ok := v.(pflag.SliceValue); ok {
		return sv.Replace(strings.Split(s, ","))
	}
	return v.Set(s)
}

// Source names where flag name's value came from, for error messages: its
// variable when Parse took it from there, else the flag.
func Source(fs *pflag.FlagSet, name string) string {
	f := fs.Lookup(name)
	if used := f.Annotations[annotEnvUsed]; len(used) > 0 {
		return used[0]
	}
	return "--" + f.Name
}

// Seconds is a duration flag that also takes a number of seconds ("90"
// is 90s), as older tools' variables give them.
type Seconds time.Duration

func (d *Seconds) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.ParseFloat(s, 64)
		if nerr != nil || math.IsNaN(n) || math.Abs(n) >= 1e9 { // NaN, ±Inf, overflow
			return fmt.Errorf("not a duration such as 90s")
		}
		v = time.Duration(n * float64(time.Second))
	}
	*d = Seconds(v)
	return nil
}

func (d *Seconds) String() string { return time.Duration(*d).String() }
func (d *Seconds) Type() string   { return "duration" }
