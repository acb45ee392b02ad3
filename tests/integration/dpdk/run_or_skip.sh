#!/bin/bash
# Runs a job over WEFT_LINKS=dpdk (tests/integration/dpdk); skips (77) when the driver
# says it cannot run here (no EAL), so a machine without DPDK support does not fail.
# Args: the command and its arguments.
set -u
out=$("$@" 2>&1)
rc=$?
echo "$out" | tail -60
if [ $rc -ne 0 ] && echo "$out" | grep -q "link driver 'dpdk' cannot run here"; then
	echo "SKIP: the dpdk driver cannot run on this machine"
	exit 77
fi
if echo "$out" | grep -q "PANIC\|Segmentation fault\|core dumped"; then
	echo "FAIL: a process crashed"
	exit 1
fi
exit $rc
