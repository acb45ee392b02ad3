# Integration tests of tools/weftrun (tests/integration): one case per run.
# usage: bash weftrun_test.sh CASE WEFTRUN CHATTER
set -u

CASE=$1
W=$2
CHATTER=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL [$CASE]: $*" >&2
	for f in "$TMP"/*; do
		[ -f "$f" ] && { echo "--- $f" >&2; head -c 4000 "$f" >&2; }
	done
	exit 1
}

# Runs weftrun with stdout/stderr to $TMP/out, $TMP/err; sets RC and MS (elapsed ms).
run() {
	local t0=${EPOCHREALTIME/./}
	"$W" "$@" >"$TMP/out" 2>"$TMP/err"
	RC=$?
	MS=$(((${EPOCHREALTIME/./} - t0) / 1000))
}

expect_rc() {
	[ "$RC" = "$1" ] || fail "exit status $RC, expected $1"
}

expect_err() {
	grep -q -- "$1" "$TMP/err" || fail "stderr lacks '$1'"
}

# Value of variable $2 printed by rank $1 as "[R] NAME=value" lines.
val() {
	sed -n "s/^\[$1\] $2=//p" "$TMP/out"
}

PRINT_ENV='for v in RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR \
	MASTER_PORT WEFT_JOB_TOKEN PASS_THROUGH; do eval "echo $v=\$$v"; done'

case_env() {
	unset WEFT_JOB_TOKEN
	PASS_THROUGH=kept run -n 3 --tag-output sh -c "$PRINT_ENV"
	expect_rc 0
	local tok0 port0 r
	tok0=$(val 0 WEFT_JOB_TOKEN)
	port0=$(val 0 MASTER_PORT)
	[[ $tok0 =~ ^[0-9a-f]{64}$ ]] || fail "token '$tok0' is not 64 hex digits"
	[[ $port0 =~ ^[0-9]+$ ]] && ((port0 > 0 && port0 < 65536)) || fail "port '$port0'"
	for r in 0 1 2; do
		[ "$(val $r RANK)" = $r ] || fail "rank $r: RANK"
		[ "$(val $r LOCAL_RANK)" = $r ] || fail "rank $r: LOCAL_RANK"
		[ "$(val $r WORLD_SIZE)" = 3 ] || fail "rank $r: WORLD_SIZE"
		[ "$(val $r LOCAL_WORLD_SIZE)" = 3 ] || fail "rank $r: LOCAL_WORLD_SIZE"
		[ "$(val $r GROUP_RANK)" = 0 ] || fail "rank $r: GROUP_RANK"
		[ "$(val $r MASTER_ADDR)" = 127.0.0.1 ] || fail "rank $r: MASTER_ADDR"
		[ "$(val $r MASTER_PORT)" = "$port0" ] || fail "rank $r: MASTER_PORT"
		[ "$(val $r WEFT_JOB_TOKEN)" = "$tok0" ] || fail "rank $r: WEFT_JOB_TOKEN"
		[ "$(val $r PASS_THROUGH)" = kept ] || fail "rank $r: environment not passed"
	done
	[ "$(wc -l <"$TMP/out")" = 27 ] || fail "expected 27 lines"

	# a token already in the environment is passed on untouched
	WEFT_JOB_TOKEN=given-token run -n 2 --tag-output --master-addr 127.0.0.1 sh -c "$PRINT_ENV"
	expect_rc 0
	[ "$(val 1 WEFT_JOB_TOKEN)" = given-token ] || fail "preset token not passed on"
}

case_torchrun() {
	local r
	# both spellings, both "--flag value" and "--flag=value"
	WEFT_JOB_TOKEN=shared run --nnodes 2 --node-rank 1 --nproc-per-node=2 \
		--master-addr=127.0.0.1 --master_port 29123 --tag-output sh -c "$PRINT_ENV"
	expect_rc 0
	for r in 0 1; do
		local g=$((2 + r))
		[ "$(val $g RANK)" = $g ] || fail "RANK of local $r"
		[ "$(val $g LOCAL_RANK)" = $r ] || fail "LOCAL_RANK of $g"
		[ "$(val $g WORLD_SIZE)" = 4 ] || fail "WORLD_SIZE of $g"
		[ "$(val $g LOCAL_WORLD_SIZE)" = 2 ] || fail "LOCAL_WORLD_SIZE of $g"
		[ "$(val $g GROUP_RANK)" = 1 ] || fail "GROUP_RANK of $g"
		[ "$(val $g MASTER_PORT)" = 29123 ] || fail "MASTER_PORT of $g"
		[ "$(val $g WEFT_JOB_TOKEN)" = shared ] || fail "WEFT_JOB_TOKEN of $g"
	done
	grep -q '^\[[01]\]' "$TMP/out" && fail "ranks 0/1 belong to node 0"

	WEFT_JOB_TOKEN=shared run --nnodes=3 --node_rank=2 --nproc_per_node 3 \
		--master_addr 127.0.0.1 --master-port=29124 --tag-output sh -c "$PRINT_ENV"
	expect_rc 0
	[ "$(val 8 RANK)" = 8 ] && [ "$(val 8 WORLD_SIZE)" = 9 ] || fail "node 2 of 3, rank 8"
	[ "$(val 6 LOCAL_RANK)" = 0 ] || fail "node 2 of 3, rank 6"

	# several nodes need a port and a shared token
	WEFT_JOB_TOKEN=shared run --nnodes 2 --node-rank 0 --nproc-per-node 1 true
	expect_rc 2
	expect_err master-port
	unset WEFT_JOB_TOKEN
	run --nnodes 2 --node-rank 0 --master-port 29125 true
	expect_rc 2
	expect_err WEFT_JOB_TOKEN
}

case_tag_output() {
	local n=4 lines=60 r i want
	run -n $n --tag-output "$CHATTER" $lines
	expect_rc 0
	# every line carries the tag of the rank that wrote it, whole
	if cat "$TMP/out" "$TMP/err" | grep -v -E '^\[([0-9])\] rank \1 line [0-9]+ [a-z]{199} end$' |
		grep -v -E '^\[([0-9])\] rank \1 partial$' >"$TMP/bad"; then
		fail "malformed or interleaved lines"
	fi
	for ((r = 0; r < n; r++)); do
		for ((i = 0; i < lines; i++)); do
			want=$( ((i % 2)) && echo err || echo out)
			grep -q "^\[$r\] rank $r line $i " "$TMP/$want" || fail "rank $r line $i lost"
		done
		# the last line had no newline and still arrives, tagged, at exit
		grep -qx "\[$r\] rank $r partial" "$TMP/out" || fail "partial line of rank $r"
	done
	[ "$(wc -l <"$TMP/out")" = $((n * lines / 2 + n)) ] || fail "stdout line count"
	[ "$(wc -l <"$TMP/err")" = $((n * lines / 2)) ] || fail "stderr line count"
}

case_success() {
	run -n 4 true
	expect_rc 0
	[ -s "$TMP/err" ] && fail "unexpected stderr"
	# without --tag-output the ranks write straight to weftrun's stdout
	run -n 3 sh -c 'echo "hello from $RANK"'
	expect_rc 0
	[ "$(sort "$TMP/out" | tr '\n' ,)" = "hello from 0,hello from 1,hello from 2," ] ||
		fail "untagged output"
}

case_exit_status() {
	run -n 3 sh -c 'if [ "$RANK" = 2 ]; then sleep 0.2; exit 3; fi; exec sleep 30'
	expect_rc 3
	expect_err "rank 2 (pid [0-9]*) exited with status 3"
	((MS < 10000)) || fail "took $MS ms; the sleeping ranks were not ended"
}

case_sigkill() {
	local tag="31.$$"
	run -n 3 sh -c "if [ \"\$RANK\" = 1 ]; then sleep 0.3; kill -KILL \$\$; fi; exec sleep $tag"
	((RC != 0)) || fail "exit status 0 after a rank was killed"
	expect_rc 137
	expect_err "rank 1 (pid [0-9]*) was killed by signal 9"
	((MS < 10000)) || fail "took $MS ms; the sleeping ranks were not ended"
	pgrep -f "sleep $tag" >/dev/null && fail "ranks left running"
	return 0
}

case_token() {
	unset WEFT_JOB_TOKEN
	run -n 1 sh -c 'echo $WEFT_JOB_TOKEN'
	expect_rc 0
	local a b
	a=$(cat "$TMP/out")
	run -n 1 sh -c 'echo $WEFT_JOB_TOKEN'
	expect_rc 0
	b=$(cat "$TMP/out")
	[[ $a =~ ^[0-9a-f]{64}$ && $b =~ ^[0-9a-f]{64}$ ]] || fail "tokens '$a' '$b' not 64 hex"
	[ "$a" != "$b" ] || fail "two launches got the same token"
}

case_bad_args() {
	local args
	while IFS= read -r args; do
		# shellcheck disable=SC2086
		run $args
		expect_rc 2
		[ -s "$TMP/err" ] || fail "no message for '$args'"
		[ -s "$TMP/out" ] && fail "stdout for '$args'"
	done <<-'EOF'
		--bogus true
		-n 0 true
		-n x true
		-n
		-n 2 --nproc-per-node 3 true
		--nnodes 2 --node-rank 2 --master-port 1 true
		--master-port 70000 true
		--master-port=abc true
		--nnodes=-1 true
		--nproc-per-node=
		-n 2
		--bind-to socket true
		--bind-to= true
	EOF
	run --help
	expect_rc 0
	grep -q '^usage: weftrun' "$TMP/out" || fail "--help has no usage"
	grep -q 'WEFT_JOB_TOKEN' "$TMP/out" || fail "--help does not mention WEFT_JOB_TOKEN"
	run -h
	expect_rc 0
	# the program's own flags are its own
	run -n 1 sh -c 'echo "$1"' sh --bogus
	expect_rc 0
	[ "$(cat "$TMP/out")" = --bogus ] || fail "program arguments"
}

case_not_found() {
	run -n 2 /nonexistent/prog-$$
	expect_rc 127
	expect_err "cannot start /nonexistent/prog-$$: No such file or directory"
	[ "$(grep -c . "$TMP/err")" = 1 ] || fail "expected one message"
}

case_forward_signal() {
	local t0 pid rc
	t0=${EPOCHREALTIME/./}
	"$W" -n 2 --tag-output sh -c \
		'trap "echo got-term; exit 0" TERM; echo ready; sleep 30 & wait' \
		>"$TMP/out" 2>"$TMP/err" &
	pid=$!
	# wait until both ranks have their trap in place
	for _ in $(seq 100); do
		[ "$(grep -c ready "$TMP/out")" = 2 ] && break
		sleep 0.05
	done
	kill -TERM $pid
	wait $pid
	rc=$?
	(((${EPOCHREALTIME/./} - t0) / 1000 < 10000)) || fail "too slow"
	[ $rc = 143 ] || fail "exit status $rc, expected 143"
	grep -qx '\[0\] got-term' "$TMP/out" && grep -qx '\[1\] got-term' "$TMP/out" ||
		fail "SIGTERM not forwarded to every rank"
	return 0
}

# --bind-to: rank i runs on the (i mod N)-th CPU (or core) weftrun may use, its threads too;
# none leaves the ranks weftrun's own CPUs. Run under a narrower mask than the machine's
# where there are 3 or more CPUs, so the places come from weftrun's mask, not the machine.
case_bind() {
	local mask cpus n r want got ranks=5
	mapfile -t cpus < <(python3 -c "import os; print('\n'.join(map(str, sorted(os.sched_getaffinity(0)))))")
	n=${#cpus[@]}
	if ((n >= 3)); then
		cpus=("${cpus[@]:1}")
		n=${#cpus[@]}
	fi
	mask=$(
		IFS=,
		echo "${cpus[*]}"
	)
	AFF='echo "aff=$(python3 -c "import os; print(\",\".join(map(str, sorted(os.sched_getaffinity(0)))))")"'
	# the CPUs of one core, as sysfs lists them, within the mask
	core_of() {
		local list
		list=$(cat /sys/devices/system/cpu/cpu$1/topology/thread_siblings_list 2>/dev/null)
		python3 -c "
import sys
allowed = set(int(c) for c in sys.argv[2].split(','))
out = set()
for part in (sys.argv[1] or sys.argv[3]).split(','):
    a, _, b = part.partition('-')
    out.update(range(int(a), int(b or a) + 1))
print(','.join(map(str, sorted(out & allowed))))" "$list" "$mask" "$1"
	}
	for how in cpu core none; do
		taskset -c "$mask" "$W" -n $ranks --tag-output --bind-to $how sh -c "$AFF" \
			>"$TMP/out" 2>"$TMP/err"
		RC=$?
		expect_rc 0
		local places=() seen=","
		for c in "${cpus[@]}"; do
			if [ $how = cpu ]; then
				places+=("$c")
			elif [ $how = core ]; then
				[[ $seen == *",$c,"* ]] && continue
				local core
				core=$(core_of "$c")
				places+=("$core")
				seen="$seen$core,"
			fi
		done
		for ((r = 0; r < ranks; r++)); do
			got=$(val $r aff)
			if [ $how = none ]; then
				want=$mask
			else
				want=${places[r % ${#places[@]}]}
			fi
			[ "$got" = "$want" ] || fail "--bind-to $how: rank $r runs on $got, expected $want"
		done
	done
	return 0
}

"case_$CASE"
echo "PASS [$CASE]"
