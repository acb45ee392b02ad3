#!/bin/bash
# A SIGSTOPped rank is declared failed by heartbeats (WEFT_PEER_TIMEOUT=2) and the ranks
# waiting for it get an error naming it within seconds, not at WEFT_TIMEOUT=60; no
# launcher kills anyone (tests/integration/heartbeat). Args: hb_stop program, links
# (shm|tcp), and "all" to require every survivor to fail (else at least one).
set -u
bin="$1"; links="$2"; need="${3:-one}"
stopped=2
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/r*; do echo "--- $f"; cat "$f"; done; exit 1; }
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

export MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) WORLD_SIZE=3
export WEFT_JOB_TOKEN=hb-test-$$ WEFT_PEER_TIMEOUT=2 WEFT_TIMEOUT=60 WEFT_LINKS=$links
export WEFT_LOG_LEVEL=${WEFT_LOG_LEVEL:-warn}
for r in 0 1 2; do
	RANK=$r "$bin" $stopped >"$tmp/r$r" 2>&1 &
	pids+=($!)
	disown # no "Killed" notices at cleanup
done
# all ranks through the first allreduce
for i in $(seq 600); do
	n=$(cat "$tmp"/r* | grep -c " ready$")
	[ "$n" -eq 3 ] && break
	for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "a rank exited early"; done
	sleep 0.1
done
[ "$n" -eq 3 ] || fail "ranks did not get ready"
ms() { echo $(($(date +%s%N) / 1000000)); }
kill -STOP "${pids[$stopped]}"
start=$(ms)
# Wait for both survivors' verdicts; with "one", stop waiting 12 s after the stop once
# one has come (the other may be waiting on a live rank, not on the stopped one).
while :; do
	n=$(cat "$tmp"/r0 "$tmp"/r1 | grep -c "second allreduce")
	el=$(($(ms) - start))
	[ "$n" -ge 2 ] && break
	[ "$need" != all ] && [ "$n" -ge 1 ] && [ $el -gt 12000 ] && break
	[ $el -gt 20000 ] && break
	sleep 0.1
done
cat "$tmp"/r0 "$tmp"/r1
failed=0
for r in 0 1; do
	line=$(grep "second allreduce" "$tmp/r$r")
	if [ -z "$line" ]; then
		echo "note: rank $r still waiting (not directly waiting on rank $stopped)"
		continue
	fi
	echo "$line" | grep -q "second allreduce succeeded" &&
		fail "rank $r's allreduce succeeded without rank $stopped"
	echo "$line" | grep -q "rank $stopped" || fail "rank $r's error does not name rank $stopped"
	took=$(echo "$line" | sed -n 's/.* after \([0-9.]*\) s:.*/\1/p')
	awk -v t="$took" 'BEGIN { exit !(t != "" && t <= 8) }' ||
		fail "rank $r took $took s (WEFT_PEER_TIMEOUT=2)"
	failed=$((failed + 1))
done
[ $failed -ge 1 ] || fail "no rank reported the stopped rank within $((el / 1000)) s"
[ "$need" != all ] || [ $failed -eq 2 ] || fail "only $failed of 2 survivors failed"
echo "heartbeat over $links: $failed survivor(s) named stopped rank $stopped"
