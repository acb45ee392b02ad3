#!/bin/bash
# A rank killed mid-run makes weftrun end the others and exit non-zero naming it
# (tests/integration). Args: weftrun, allreduce_check.
set -u
weftrun="$1"; prog="$2"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
WEFT_TIMEOUT=600 timeout 120 "$weftrun" -n 4 "$prog" --die-at 50 >"$out" 2>&1
rc=$?
end=$(date +%s)
cat "$out"
[ $rc -ne 0 ] || { echo "FAIL: weftrun exited 0"; exit 1; }
[ $rc -ne 124 ] || { echo "FAIL: weftrun hung"; exit 1; }
grep -q "rank 1" "$out" || { echo "FAIL: weftrun did not name rank 1"; exit 1; }
[ $((end - start)) -le 60 ] || { echo "FAIL: took $((end - start)) s"; exit 1; }
echo "killed rank handled: weftrun exit $rc"
