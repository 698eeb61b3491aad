#!/bin/sh
# The workflow demo: `collab run` of examples/standin/release.yaml, a team
# of three agents (lead, reviewer, coder) whose model is the stand-in
# program. It sets the team up, posts the kickoff, prints the conversation,
# and stops when every agent is idle. Needs only Go; a few seconds.
set -eu
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

echo "== building collab and the stand-in model"
mkdir "$work/bin"
go build -o "$work/bin/collab" ./cmd/collab
go build -o "$work/bin/standin" ./demo/standin
PATH="$work/bin:$PATH"
export COLLAB_ROOT="$work/tree"
collab init >/dev/null

echo "== collab run examples/standin/release.yaml --instance demo"
collab run --agent human --instance demo --poll 200ms --heartbeat 1s examples/standin/release.yaml
echo
echo "== collab ls"
collab ls
echo
echo "== collab who (after the run)"
collab who
