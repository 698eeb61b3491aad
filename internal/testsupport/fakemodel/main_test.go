package fakemodel_test

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestMain runs more tests at once than GOMAXPROCS, unless -parallel is
// given: the CLI tests mostly wait for node to start and for the server,
// not for the CPU.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(max(8, runtime.GOMAXPROCS(0)))); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
