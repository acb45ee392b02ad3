#!/usr/bin/env bash
# weft-perf -R 1 (buffers from weft_mem_alloc) end to end (tests/integration): allreduce up
# to 4 MiB on 2 ranks checks clean, under the automatic choice and with the `direct`
# algorithm forced; the check still catches a wrong element; bad -R values exit 2.
# Usage: weft_perf_mem.sh CASE WEFTRUN WEFT_PERF
FAIL_LINES=40
. "$(dirname "$0")/prelude.sh"

# 64 B .. 4 MiB by 4: nine sizes.
SIZES="64 256 1024 4096 16384 65536 262144 1048576 4194304"
SWEEP=(-b 64 -e 4M -f 4 -n 3 -w 1 -c 1)

# Data rows: "size count type op root time algbw busbw wrong".
rows() {
	awk '/^ +[0-9]/' "$out"
}

# Runs weft-perf allreduce -R 1 on 2 ranks; want the exit status $1.
run() {
	local want=$1
	shift
	timeout 50 "$weftrun" -n 2 "$perf" allreduce -R 1 "${SWEEP[@]}" "$@" >"$out" 2>"$err"
	local rc=$?
	[ "$rc" -eq "$want" ] || fail "weft-perf allreduce -R 1 $* exited $rc, want $want"
}

check_clean() {
	[ "$(rows | awk '{ printf "%s ", $1 }')" = "$SIZES " ] || fail "sizes are not '$SIZES'"
	rows | awk 'NF != 9 || $9 != "0" { exit 1 }' || fail "a row has #wrong != 0"
	grep -q '^# Out of bounds values : 0 OK$' "$out" || fail "no 'Out of bounds values : 0 OK'"
}

case "$case_name" in
auto_n2)
	run 0
	check_clean
	;;
direct_n2)
	WEFT_ALGO=allreduce:direct run 0
	check_clean
	# Async, several in flight: every slot's buffers are weft_mem regions of their own.
	WEFT_ALGO=allreduce:direct run 0 -a 3
	check_clean
	;;
corrupt_n2)
	# The test hook changes one element of rank 1's result before each check: with
	# weft_mem buffers too, every row counts exactly that one.
	WEFT_PERF_CORRUPT=1 WEFT_ALGO=allreduce:direct run 1
	rows | awk '$9 != "1" { exit 1 }' || fail "a row's #wrong is not 1 with the hook"
	grep -q '^# Out of bounds values : 9 FAILED$' "$out" || fail "no 'Out of bounds values : 9'"
	;;
bad_args)
	for v in 2 -1 x 1x ""; do
		"$perf" allreduce -R "$v" -b 8 -e 8 >"$out" 2>"$err"
		rc=$?
		[ "$rc" -eq 2 ] || fail "'weft-perf allreduce -R $v' exited $rc, want 2"
		grep -q -- "-R" "$err" || fail "'weft-perf allreduce -R $v' does not name -R"
	done
	"$perf" allreduce --register=2 -b 8 -e 8 >"$out" 2>"$err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "'--register=2' exited $rc, want 2"
	# Under weftrun every rank refuses it before start-up: the job exits 2.
	timeout 25 "$weftrun" -n 2 "$perf" allreduce -R 2 -b 8 -e 8 >"$out" 2>"$err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "-R 2 on 2 ranks exited $rc, want 2"
	"$perf" -h >"$out" 2>"$err" || fail "-h exited non-zero"
	grep -q -- '-R, --register' "$out" || fail "-h does not list -R"
	;;
*)
	echo "unknown case $case_name" >&2
	exit 1
	;;
esac
echo "ok ($case_name)"
