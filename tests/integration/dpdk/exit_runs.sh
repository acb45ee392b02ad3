#!/bin/bash
# N consecutive 2-process jobs over WEFT_LINKS=dpdk (tests/integration/dpdk) must all end
# cleanly: DPDK 22.11 is known to crash in the EAL's interrupt thread at exit when
# rte_eal_cleanup follows the close of a memif port, and weft never calls it.
# Args: weftrun, program, runs, then program arguments.
set -u
weftrun="$1"; prog="$2"; runs="$3"; shift 3
for i in $(seq 1 "$runs"); do
	out=$(WEFT_LINKS=dpdk "$weftrun" -n 2 "$prog" "$@" 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && echo "$out" | grep -q "link driver 'dpdk' cannot run here"; then
		echo "SKIP: the dpdk driver cannot run on this machine"
		exit 77
	fi
	if [ $rc -ne 0 ] || echo "$out" | grep -q "PANIC\|Segmentation fault\|core dumped"; then
		echo "FAIL: run $i of $runs ended with status $rc"
		echo "$out" | tail -40
		exit 1
	fi
done
echo "ok: $runs runs ended cleanly"
