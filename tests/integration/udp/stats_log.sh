#!/bin/bash
# WEFT_LOG_LEVEL=info makes weft_comm_destroy log each peer link's counters, with the
# reliability layer's and the injector's lines when they run (tests/integration/udp).
# Args: weftrun, soak program.
set -u
weftrun="$1"; soak="$2"
out=$(WEFT_LOG_LEVEL=info WEFT_LINKS=udp WEFT_FAULT=drop=0.05,seed=5 \
	"$weftrun" -n 2 "$soak" --calls 200 --max-bytes 65536 2>&1)
rc=$?
fail() { echo "FAIL: $*"; echo "$out" | tail -40; exit 1; }
[ $rc -eq 0 ] || fail "the job failed ($rc)"
for r in 0 1; do
	p=$((1 - r))
	echo "$out" | grep -q "weft\[$r\].*comm [0-9]*: link to rank $p (world $p) over udp (reliability layer): sent [1-9][0-9]* frames" ||
		fail "rank $r logged no traffic counters for rank $p"
	echo "$out" | grep -q "weft\[$r\].*comm [0-9]*: link to rank $p: retransmits [0-9]*, timeouts" ||
		fail "rank $r logged no protocol counters"
	echo "$out" | grep -q "weft\[$r\].*comm [0-9]*: link to rank $p: WEFT_FAULT injected [1-9][0-9]* drops" ||
		fail "rank $r logged no injected faults"
done
echo "ok: both ranks logged their link counters at destroy"
