package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ErrAmbiguous is wrapped when an id names jobs of more than one agent.
var ErrAmbiguous = errors.New("jobs: ambiguous id")

// Lookup finds the job id names: a job id, or for convenience the id of
// the message a job answers (its newest job). agent, when not "", narrows
// the search to that agent's jobs. An id that names jobs of two agents is
// an error wrapping [ErrAmbiguous] that lists them; none, one wrapping
// fs.ErrNotExist. It lists the folders of the agents searched (each
// bounded by [Keep]).
func Lookup(root tree.Root, agent, id string) (Job, error) {
	if err := checkID(id); err != nil && checkID("job-"+id) != nil {
		return Job{}, err
	}
	var all []Job
	var err error
	if agent != "" {
		all, err = List(root, agent)
	} else {
		all, err = ListAll(root)
	}
	if err != nil {
		return Job{}, err
	}
	j, err := Match(all, id)
	if errors.Is(err, fs.ErrNotExist) && agent == "" && checkID(id) == nil {
		return Find(root, id) // names an agent folder it skips (a symlink)
	}
	return j, err
}

// Match finds the job id names among all (newest first, as [List] returns
// them): the job of that id, else the newest job of each agent for the
// message of that id. Jobs of two agents are an error wrapping
// [ErrAmbiguous] that lists them; none, one wrapping fs.ErrNotExist.
func Match(all []Job, id string) (Job, error) {
	var byID, byMessage []Job // newest first, one per agent
	seenID, seenMsg := map[string]bool{}, map[string]bool{}
	for _, j := range all {
		switch {
		case j.ID == id && !seenID[j.Agent]:
			seenID[j.Agent] = true
			byID = append(byID, j)
		case j.Message == id && !seenMsg[j.Agent]:
			seenMsg[j.Agent] = true
			byMessage = append(byMessage, j)
		}
	}
	found := byID
	if len(found) == 0 {
		found = byMessage
	}
	switch len(found) {
	case 0:
		return Job{}, fmt.Errorf("job %s: %w", id, fs.ErrNotExist)
	case 1:
		return found[0], nil
	}
	var names []string
	for _, j := range found {
		names = append(names, j.Agent+" "+j.ID)
	}
	return Job{}, fmt.Errorf("%w: %s names jobs of %d agents (%s); name the agent", ErrAmbiguous, id, len(found), strings.Join(names, ", "))
}
