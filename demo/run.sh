#!/bin/sh
# The collab demo: two watchers (claude and codex) whose model is a small
# stand-in program, a message from a person, the conversation that follows,
# presence, and a clean shutdown. Needs only Go; finishes in a few seconds.
set -eu
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pids=
cleanup() {
	[ -n "$pids" ] && kill $pids 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "== building collab and the stand-in model"
go build -o "$work/collab" ./cmd/collab
go build -o "$work/standin" ./demo/standin
collab="$work/collab"
export COLLAB_ROOT="$work/tree"
"$collab" init >/dev/null

echo "== starting two watchers in $COLLAB_ROOT"
for agent in claude codex; do
	"$collab" watch --agent "$agent" --channel demo --cli command --cmd "$work/standin" \
		--poll 200ms --heartbeat 1s 2>"$work/$agent.log" &
	pids="$pids $!"
done
for i in $(seq 50); do
	"$collab" who --check claude && "$collab" who --check codex && break
	sleep 0.1
done
"$collab" who

echo "== a person asks claude to involve codex"
"$collab" send --agent human --channel demo --to claude "please ask codex to review the release plan"

# The stand-in answers: claude passes it on, codex reviews, claude sees
# nothing left to say (NO_REPLY). Wait for both replies.
for i in $(seq 100); do
	n=$("$collab" read --channel demo --json | wc -l)
	[ "$n" -ge 3 ] && break
	sleep 0.1
done
sleep 1 # let claude decide on codex's reply
echo
echo "== collab read --channel demo"
"$collab" read --channel demo

echo "== collab who (while running)"
"$collab" who

echo "== stopping the watchers (SIGTERM)"
kill -TERM $pids
wait $pids 2>/dev/null || true
pids=
"$collab" who
echo
echo "== what claude's watcher logged"
cat "$work/claude.log"
