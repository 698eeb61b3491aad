#!/bin/sh
# Install collab on this host and into the shared tree.
#
#   deploy/install.sh [--root ROOT] [--group GROUP] [--prefix PREFIX] [--bin PATH] [--no-shared-bin]
#                     [--systemd] [--nats-cluster N] [--force]
#
# - builds cmd/collab (or takes --bin PATH) and installs it as PREFIX/bin/collab
#   (default PREFIX /usr/local);
# - copies it to ROOT/bin/OS-ARCH/collab, so hosts of every architecture can
#   share one tree (skip with --no-shared-bin);
# - installs the seed-compatible entry points into ROOT/scripts, so
#   ROOT/scripts/who and ROOT/scripts/send-message work as in the seed;
# - creates the tree's folders (docs/protocol.md#the-shared-tree) with `collab init`; with --group,
#   they belong to GROUP, group-writable and set-group-ID;
# - with --systemd, installs collab-watcher@.service, collab-resume.service,
#   collab-bridge.service and collab-serve.service, and /etc/collab/ with an
#   example agent file (never overwriting one that exists);
# - with --nats-cluster N (1 to 3), installs node nats-N's configuration of
#   deploy/nats/cluster into /etc/collab/nats (README.md there); alone (no
#   --systemd, no --bin) it installs nothing else.
# A unit or configuration file that exists and differs from this one is
# kept, and said so; --force replaces it, the old one kept as FILE.orig.
# With DESTDIR set, files meant for /etc go under DESTDIR/etc instead.
# ROOT defaults to $COLLAB_ROOT, then /mnt/shared/collab. Every file is put in
# place by rename, so running watchers are never handed a half-copied binary.
set -eu

root=${COLLAB_ROOT:-/mnt/shared/collab}
prefix=/usr/local
bin=
shared_bin=1
systemd=
group=
cluster_node=
force=
etc=${DESTDIR:-}/etc
while [ $# -gt 0 ]; do
	case $1 in
	--root) root=$2; shift 2 ;;
	--root=*) root=${1#*=}; shift ;;
	--prefix) prefix=$2; shift 2 ;;
	--prefix=*) prefix=${1#*=}; shift ;;
	--bin) bin=$2; shift 2 ;;
	--bin=*) bin=${1#*=}; shift ;;
	--no-shared-bin) shared_bin=; shift ;;
	--systemd) systemd=1; shift ;;
	--nats-cluster) cluster_node=$2; shift 2 ;;
	--nats-cluster=*) cluster_node=${1#*=}; shift ;;
	--force) force=1; shift ;;
	--group) group=$2; shift 2 ;;
	--group=*) group=${1#*=}; shift ;;
	-h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

case $cluster_node in
''|1|2|3) ;;
*) echo "install.sh: --nats-cluster wants a node number from 1 to 3, not $cluster_node" >&2; exit 2 ;;
esac

src=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# put SRC DEST MODE: copy next to DEST, then rename over it.
put() {
	mkdir -p "$(dirname -- "$2")"
	tmp="$(dirname -- "$2")/.$(basename -- "$2").install.$$"
	cp "$1" "$tmp"
	chmod "$3" "$tmp"
	mv -f "$tmp" "$2"
}

# conf SRC DEST MODE: put a unit or configuration file in place, unless
# DEST exists and differs (an administrator's change): then keep it and
# say so, or with --force keep it as DEST.orig and replace it.
conf() {
	if [ -e "$2" ]; then
		if cmp -s "$1" "$2"; then
			echo "unchanged $2"
			return 0
		fi
		if [ -z "$force" ]; then
			echo "install.sh: $2 differs from $1: kept (compare them; --force replaces it, keeping it as $2.orig)" >&2
			return 0
		fi
		cp -p "$2" "$2.orig"
		echo "replaced $2 (the old one is $2.orig)"
	fi
	put "$1" "$2" "$3"
}

if [ -n "$cluster_node" ]; then
	conf "$src/deploy/nats/accounts.conf" "$etc/collab/nats/accounts.conf" 0644
	conf "$src/deploy/nats/cluster/cluster.conf" "$etc/collab/nats/cluster/cluster.conf" 0644
	conf "$src/deploy/nats/cluster/nats-$cluster_node.conf" "$etc/collab/nats/cluster/nats-$cluster_node.conf" 0644
	conf "$src/deploy/nats-server.service" "$etc/systemd/system/nats-server.service" 0644
	[ -z "${DESTDIR:-}" ] && command -v systemctl >/dev/null 2>&1 && systemctl daemon-reload || true
	echo "installed node nats-$cluster_node's configuration in /etc/collab/nats: add the certificates and /etc/collab/nats.env, point nats-server.service at it (deploy/nats/cluster/README.md)"
	[ -n "$systemd" ] || [ -n "$bin" ] || exit 0
fi

if [ -z "$bin" ]; then
	command -v go >/dev/null 2>&1 || { echo "install.sh: go not found; build collab elsewhere and pass --bin" >&2; exit 1; }
	(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$work/collab" ./cmd/collab)
	bin=$work/collab
fi

put "$bin" "$prefix/bin/collab" 0755
echo "installed $prefix/bin/collab"

if [ -n "$group" ]; then
	"$bin" init --root "$root" --group "$group"
else
	"$bin" init --root "$root"
fi
if [ -n "$shared_bin" ]; then
	arch=$(uname -s | tr 'A-Z' 'a-z')-$(uname -m)
	put "$bin" "$root/bin/$arch/collab" 0755
	echo "installed $root/bin/$arch/collab"
fi
for s in "$src"/scripts/*; do
	case $s in *.go) continue ;; esac # scripts.go embeds them for collab init
	put "$s" "$root/scripts/$(basename -- "$s")" 0755
done
echo "installed $root/scripts: $(cd "$src/scripts" && ls | grep -v '\.go$' | tr '\n' ' ')"

if [ -n "$systemd" ]; then
	for u in collab-watcher@.service collab-resume.service collab-bridge.service collab-serve.service; do
		conf "$src/deploy/$u" "$etc/systemd/system/$u" 0644
	done
	mkdir -p "$etc/collab"
	[ -e "$etc/collab/agent.env.example" ] || cp "$src/deploy/agent.env.example" "$etc/collab/agent.env.example"
	[ -z "${DESTDIR:-}" ] && command -v systemctl >/dev/null 2>&1 && systemctl daemon-reload || true
	echo "installed collab-watcher@.service; configure /etc/collab/AGENT.env, then: systemctl enable --now collab-watcher@AGENT"
	echo "installed collab-resume.service (restarts delegated agents at boot): systemctl enable collab-resume"
	echo "installed collab-bridge.service (serves hosts without the mount): configure /etc/collab/bridge.env, then: systemctl enable --now collab-bridge"
	echo "installed collab-serve.service (dashboard, API, MCP over HTTP): configure /etc/collab/serve.env, then: systemctl enable --now collab-serve"
fi
