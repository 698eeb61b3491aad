package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// The results a figure can have.
const (
	resultPass  = "pass"
	resultFail  = "FAIL"
	resultNone  = "-" // no target
	resultError = "ERROR"
)

// Figure is one line of the table: the median of a measurement over runs,
// and its target, an upper bound.
type Figure struct {
	Name   string    `json:"name"`
	Unit   string    `json:"unit"`
	Value  *float64  `json:"value"` // median of Runs; null if not measured
	Runs   []float64 `json:"runs"`
	Max    *float64  `json:"target_max"` // null: no target
	Result string    `json:"result"`
	Note   string    `json:"note,omitempty"`
	Error  string    `json:"error,omitempty"`
}

// spec describes a figure before it is measured.
type spec struct {
	name, unit string
	max        float64 // the target; 0: none
	note       string
}

// figure judges the per-run values of a measurement. An error after some
// runs keeps the values measured so far but marks the figure an error.
func (s spec) figure(runs []float64, err error) Figure {
	f := Figure{Name: s.name, Unit: s.unit, Runs: runs, Note: s.note, Result: resultNone}
	if f.Runs == nil {
		f.Runs = []float64{}
	}
	if s.max > 0 {
		f.Max = &s.max
	}
	if len(runs) > 0 {
		v := median(runs)
		f.Value = &v
		if f.Max != nil {
			f.Result = resultPass
			if v > *f.Max {
				f.Result = resultFail
			}
		}
	}
	if err != nil {
		f.Error, f.Result = err.Error(), resultError
	}
	return f
}

// Report is what the JSON file holds.
type Report struct {
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Runs    int       `json:"runs"`
	Quick   bool      `json:"quick"`
	CPUs    int       `json:"cpus"`
	Go      string    `json:"go"`
	TempDir string    `json:"temp_dir"`
	TempFS  string    `json:"temp_fs,omitempty"`
	// The 1, 5 and 15 minute load averages before and after: the figures
	// mean little if something else was running.
	LoadBefore string   `json:"load_before,omitempty"`
	LoadAfter  string   `json:"load_after,omitempty"`
	Figures    []Figure `json:"figures"`
	Failures   int      `json:"failures"` // figures over their target
	Errors     int      `json:"errors"`   // figures not measured
}

func (r *Report) count() {
	r.Failures, r.Errors = 0, 0
	for _, f := range r.Figures {
		switch f.Result {
		case resultFail:
			r.Failures++
		case resultError:
			r.Errors++
		}
	}
}

// writeTable prints the figures as one table.
func writeTable(w io.Writer, figs []Figure) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIGURE\tVALUE\tTARGET\tRESULT")
	for _, f := range figs {
		value := "-"
		if f.Value != nil {
			value = formatValue(*f.Value, f.Unit)
		}
		target := "-"
		if f.Max != nil {
			target = "≤ " + strconv.FormatFloat(*f.Max, 'f', -1, 64) + " " + f.Unit
		}
		result := f.Result
		if f.Error != "" {
			result += ": " + f.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, value, target, result)
	}
	return tw.Flush()
}

// formatValue prints v with two significant decimals for small values and
// none for large ones, then its unit.
func formatValue(v float64, unit string) string {
	prec := 0
	switch a := math.Abs(v); {
	case a < 10:
		prec = 2
	case a < 100:
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + unit
}

// writeJSON writes the report to path, replacing it.
func writeJSON(path string, r *Report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o666); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// median returns the middle of vs (the mean of the two middle values for
// an even count).
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted ds by the
// nearest-rank method, as watcher's latency test does.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// thousands formats n with commas: 100,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
