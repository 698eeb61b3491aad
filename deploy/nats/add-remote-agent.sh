#!/bin/sh
# Print what accounts.conf needs for one remote agent (see README.md):
#   deploy/nats/add-remote-agent.sh AGENT [MAX_CONNECTIONS]
# Two parts: COLLAB's exports to the agent's account (paste them into
# COLLAB's exports list) and the agent's account REMOTE-AGENT (paste it
# into the accounts block, next to COLLAB). MAX_CONNECTIONS (default 16) is
# the agent's connection cap: every collab process on its host (a watcher,
# an MCP server, read --follow, each command while it runs) holds one, and
# the server refuses the next. Then set COLLAB_REMOTE_<AGENT>_PASSWORD in
# the server's environment (letters of AGENT upper-cased, '-' as '_') and
# reload the server (nats-server --signal reload).
set -eu
here=$(dirname "$0")
agent=${1:-}
max=${2:-16}
usage="usage: $0 AGENT [MAX_CONNECTIONS] (AGENT: 1-64 letters, digits, '_' and '-', not starting with '-'; MAX_CONNECTIONS: 1-9999)"
case $agent in
'' | -* | *[!A-Za-z0-9_-]*) echo "$usage" >&2; exit 2 ;;
esac
[ ${#agent} -le 64 ] || { echo "$usage" >&2; exit 2; }
case $max in
'' | 0* | *[!0-9]*) echo "$usage" >&2; exit 2 ;;
esac
[ ${#max} -le 4 ] || { echo "$usage" >&2; exit 2; }
[ $# -le 2 ] || { echo "$usage" >&2; exit 2; }
var=$(printf '%s' "$agent" | tr 'a-z-' 'A-Z_')
# part PART: the lines between "# BEGIN remote agent PART" and its END,
# without the markers and their "# ", filled in.
part() {
	sed -n "/# BEGIN remote agent $1\$/,/# END remote agent $1\$/p" "$here/accounts.conf" |
		sed -e '1d' -e '$d' -e 's/^ *# \{0,1\}//' \
			-e 's/COLLAB_REMOTE_AGENT_PASSWORD/@PASSWORD@/' -e "s/AGENT/$agent/g" \
			-e "s/@PASSWORD@/COLLAB_REMOTE_${var}_PASSWORD/" -e "s/max_connections: [0-9]*/max_connections: $max/"
}
echo "# In COLLAB's exports: [ ... ]:"
part exports
echo "# In accounts { ... }, next to COLLAB:"
part account
