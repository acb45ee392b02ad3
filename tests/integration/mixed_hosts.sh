#!/bin/bash
# One job over two "hosts" (WEFT_HOST_ID): ranks on the same host use shm, the others
# tcp, in the same allreduces (tests/integration). Args: weftrun, allreduce_check.
set -u
out=$(mktemp)
trap 'rm -f "$out"' EXIT
WEFT_LOG_LEVEL=info "$1" -n 4 --tag-output \
	bash -c 'WEFT_HOST_ID=host$((RANK % 2)) exec "$0" --quick' "$2" >"$out" 2>&1
rc=$?
grep -v "INFO" "$out"
[ $rc -eq 0 ] || { echo "FAIL: job exited $rc"; exit 1; }
grep -q "rank 0 reaches rank 2 over shm" "$out" || { echo "FAIL: 0-2 not over shm"; exit 1; }
grep -q "rank 0 reaches rank 1 over tcp" "$out" || { echo "FAIL: 0-1 not over tcp"; exit 1; }
grep -q "rank 3 reaches rank 1 over shm" "$out" || { echo "FAIL: 3-1 not over shm"; exit 1; }
echo "mixed shm + tcp job ok"
