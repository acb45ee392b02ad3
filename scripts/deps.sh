#!/bin/sh
# Installs the Debian packages weft needs, when missing: via apt-get as root, otherwise
# prints the exact command to run.
missing=""
for p in "$@"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
	echo "deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null || { echo "deps: apt-get update failed" >&2; exit 1; }
	apt-get install -y -q --no-install-recommends $missing || exit 1
else
	echo "deps: missing packages; run as root:" >&2
	echo "  apt-get install -y$missing" >&2
	exit 1
fi
