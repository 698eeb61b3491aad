package service

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/workspace/task"
)

// ReadTaskDetail is a checkpoint's or an outcome's structured detail as a
// door is given it: inline JSON, or the path of a file holding it (at
// most task.MaxDetail*4 bytes read), not both. Neither is no detail (nil).
// What is not a JSON object is Invalid; a file that cannot be read
// NotFound or Failed.
func ReadTaskDetail(inline, path string) (task.Detail, error) {
	data := []byte(inline)
	switch {
	case inline != "" && path != "":
		return nil, errkind.New(errkind.Invalid, "give the detail inline or as a file, not both")
	case path != "":
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, errkind.Wrap(errkind.NotFound, fmt.Errorf("detail file: %w", err))
		}
		if err != nil {
			return nil, fmt.Errorf("detail file: %w", err)
		}
		defer f.Close()
		if data, err = io.ReadAll(io.LimitReader(f, 4*task.MaxDetail+1)); err != nil {
			return nil, fmt.Errorf("detail file: %w", err)
		}
	}
	d, err := task.ParseDetail(data)
	return d, TaskError(err)
}
