#!/bin/sh
# Print the accounts.conf user block of one remote agent (see README.md):
#   deploy/nats/add-remote-agent.sh AGENT
# Paste the output into the users list of accounts.conf, set
# COLLAB_REMOTE_<AGENT>_PASSWORD in the server's environment (letters of
# AGENT upper-cased, '-' as '_'), and reload the server (nats-server --signal reload).
set -eu
here=$(dirname "$0")
agent=${1:-}
usage="usage: $0 AGENT (1-64 letters, digits, '_' and '-', not starting with '-')"
case $agent in
'' | -* | *[!A-Za-z0-9_-]*) echo "$usage" >&2; exit 2 ;;
esac
[ ${#agent} -le 64 ] || { echo "$usage" >&2; exit 2; }
var=$(printf '%s' "$agent" | tr 'a-z-' 'A-Z_')
sed -n '/# BEGIN remote agent template/,/# END remote agent template/p' "$here/accounts.conf" |
	sed -e '1,4d' -e '$d' -e 's/^      # //' -e "s/COLLAB_REMOTE_AGENT_PASSWORD/COLLAB_REMOTE_${var}_PASSWORD/" -e "s/AGENT/$agent/g"
