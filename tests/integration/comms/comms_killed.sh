#!/bin/bash
# A rank that dies (SIGKILL) during a stream of allreduces: every survivor must get
# WEFT_ERR_PEER_FAILED naming it, within the peer timeout, and exit 0 after destroy
# (tests/integration). Not under weftrun, which would end the survivors itself.
# Args: comms_check [ranks] [victim].
set -u
prog="$1"; n="${2:-4}"; victim="${3:-2}"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
pids=()
for ((r = 0; r < n; r++)); do
	RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 \
	MASTER_PORT=$port WEFT_JOB_TOKEN=$token WEFT_PEER_TIMEOUT=${WEFT_PEER_TIMEOUT:-10} \
	WEFT_LOG_LEVEL=${WEFT_LOG_LEVEL:-error} \
		timeout -k 5 60 "$prog" --killed "$victim" >"$dir/out.$r" 2>&1 &
	pids+=($!)
done
fail=0
for ((r = 0; r < n; r++)); do
	wait "${pids[$r]}"
	rc=$?
	sed "s/^/[$r] /" "$dir/out.$r"
	if [ "$r" -eq "$victim" ]; then
		[ $rc -eq 137 ] || { echo "FAIL: victim rank $r exited $rc, not by SIGKILL"; fail=1; }
	elif [ $rc -ne 0 ]; then
		echo "FAIL: survivor rank $r exited $rc"
		fail=1
	fi
done
end=$(date +%s)
echo "all ranks ended after $((end - start)) s"
[ $((end - start)) -le 45 ] || { echo "FAIL: took $((end - start)) s"; fail=1; }
exit $fail
