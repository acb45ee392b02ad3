#!/bin/bash
# A wrong job token is refused and the job goes on; an unreachable store times out
# cleanly and names its address (tests/integration). Args: path to init_expect.
set -u
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; kill $(jobs -p) 2>/dev/null' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail() { echo "FAIL: $*"; for f in "$tmp"/*; do echo "--- $f"; cat "$f"; done; exit 1; }

# 1. A 2-rank job with the right token, and an intruder with a wrong one in between.
port=$(free_port)
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 WEFT_CONNECT_TIMEOUT=20
RANK=0 WEFT_JOB_TOKEN=good-token "$bin" OK --allreduce >"$tmp/r0" 2>&1 &
p0=$!
sleep 0.5
RANK=1 WEFT_JOB_TOKEN=wrong-token WEFT_CONNECT_TIMEOUT=3 "$bin" AUTH >"$tmp/intruder" 2>&1 \
	|| fail "intruder was not refused with WEFT_ERR_AUTH"
RANK=1 WEFT_JOB_TOKEN=good-token "$bin" OK --allreduce >"$tmp/r1" 2>&1 || fail "rank 1 failed"
wait $p0 || fail "rank 0 failed after the intruder"
grep -q "allreduce ok" "$tmp/r0" || fail "rank 0 did not finish its allreduce"
grep -qi "auth" "$tmp/r0" || fail "rank 0's store did not log the refused connection"

# 2. Nobody listens at MASTER_PORT: init fails with WEFT_ERR_TIMEOUT in about the
# connect timeout, naming the address.
port=$(free_port)
start=$(date +%s)
MASTER_PORT=$port RANK=1 WORLD_SIZE=2 WEFT_JOB_TOKEN=t WEFT_CONNECT_TIMEOUT=2 \
	"$bin" TIMEOUT >"$tmp/timeout" 2>&1 || fail "unreachable store did not time out cleanly"
end=$(date +%s)
[ $((end - start)) -le 15 ] || fail "timeout took $((end - start)) s for WEFT_CONNECT_TIMEOUT=2"
grep -q "127.0.0.1:$port" "$tmp/timeout" || fail "timeout message does not name 127.0.0.1:$port"
echo "auth and timeout behaviour ok"
