#!/bin/sh
# Install collab on this host and into the shared tree.
#
#   deploy/install.sh [--root ROOT] [--group GROUP] [--prefix PREFIX] [--bin PATH] [--no-shared-bin] [--systemd]
#
# - builds cmd/collab (or takes --bin PATH) and installs it as PREFIX/bin/collab
#   (default PREFIX /usr/local);
# - copies it to ROOT/bin/OS-ARCH/collab, so hosts of every architecture can
#   share one tree (skip with --no-shared-bin);
# - installs the seed-compatible entry points into ROOT/scripts, so
#   ROOT/scripts/who and ROOT/scripts/send-message work as in the seed;
# - creates the tree's folders (docs/protocol.md#the-shared-tree) with `collab init`; with --group,
#   they belong to GROUP, group-writable and set-group-ID;
# - with --systemd, installs collab-watcher@.service and /etc/collab/ with an
#   example agent file (never overwriting one that exists).
# ROOT defaults to $COLLAB_ROOT, then /mnt/shared/collab. Every file is put in
# place by rename, so running watchers are never handed a half-copied binary.
set -eu

root=${COLLAB_ROOT:-/mnt/shared/collab}
prefix=/usr/local
bin=
shared_bin=1
systemd=
group=
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
	--group) group=$2; shift 2 ;;
	--group=*) group=${1#*=}; shift ;;
	-h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "install.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

src=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -z "$bin" ]; then
	command -v go >/dev/null 2>&1 || { echo "install.sh: go not found; build collab elsewhere and pass --bin" >&2; exit 1; }
	(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$work/collab" ./cmd/collab)
	bin=$work/collab
fi

# put SRC DEST MODE: copy next to DEST, then rename over it.
put() {
	mkdir -p "$(dirname -- "$2")"
	tmp="$(dirname -- "$2")/.$(basename -- "$2").install.$$"
	cp "$1" "$tmp"
	chmod "$3" "$tmp"
	mv -f "$tmp" "$2"
}

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
	put "$src/deploy/collab-watcher@.service" /etc/systemd/system/collab-watcher@.service 0644
	put "$src/deploy/collab-resume.service" /etc/systemd/system/collab-resume.service 0644
	put "$src/deploy/collab-bridge.service" /etc/systemd/system/collab-bridge.service 0644
	mkdir -p /etc/collab
	[ -e /etc/collab/agent.env.example ] || cp "$src/deploy/agent.env.example" /etc/collab/agent.env.example
	command -v systemctl >/dev/null 2>&1 && systemctl daemon-reload || true
	echo "installed collab-watcher@.service; configure /etc/collab/AGENT.env, then: systemctl enable --now collab-watcher@AGENT"
	echo "installed collab-resume.service (restarts delegated agents at boot): systemctl enable collab-resume"
	echo "installed collab-bridge.service (serves hosts without the mount): configure /etc/collab/bridge.env, then: systemctl enable --now collab-bridge"
fi
