#!/bin/bash
# Programs outside the tree build against weft through pkg-config (the uninstalled
# weft.pc), shared and static, and libweft.so exports nothing but weft_* symbols
# (tests/integration). Args: build dir.
set -eu
build="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bad=$(nm -D --defined-only "$build/libweft.so" | awk '{print $3}' | grep -v '^weft_' || true)
[ -z "$bad" ] || fail "libweft.so exports non-weft symbols: $bad"
nm -D --defined-only "$build/libweft.so" | grep -q ' weft_allreduce$' || fail "weft_allreduce not exported"

cat >"$tmp/app.c" <<'C'
#include <stdio.h>
#include <weft/weft.h>
int main(void)
{
	weft_comm_t *w;
	double x[3] = {1, 2, 3}, y[3];
	if (weft_init(&w) != WEFT_OK)
		return 1;
	if (weft_allreduce(x, y, 3, WEFT_FLOAT64, WEFT_SUM, w, NULL) != WEFT_OK || y[2] != 3)
		return 2;
	printf("app ok: weft %s, %d rank(s)\n", weft_version(), weft_comm_size(w));
	return weft_comm_destroy(w) == WEFT_OK ? 0 : 3;
}
C
export PKG_CONFIG_PATH="$build/meson-uninstalled"
pkg-config --exists weft || fail "pkg-config does not find weft in $PKG_CONFIG_PATH"
cc -std=c11 -Wall -Werror "$tmp/app.c" -o "$tmp/app_shared" $(pkg-config --cflags --libs weft)
env -u RANK -u WORLD_SIZE LD_LIBRARY_PATH="$build" "$tmp/app_shared" || fail "shared app failed"
libs=$(pkg-config --static --libs weft | sed "s#-lweft#$build/libweft.a#")
cc -std=c11 -Wall -Werror "$tmp/app.c" -o "$tmp/app_static" $(pkg-config --cflags weft) $libs
ldd "$tmp/app_static" | grep -q libweft && fail "static app still needs libweft.so"
env -u RANK -u WORLD_SIZE "$tmp/app_static" || fail "static app failed"
echo "linkage ok"
