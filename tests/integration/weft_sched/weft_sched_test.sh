#!/usr/bin/env bash
# weft-sched integration cases (tests/integration): usage weft_sched_test.sh CASE WEFT_SCHED
set -u
case_name=$1
ws=$2
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

fail() {
	echo "FAIL ($case_name): $*" >&2
	echo "--- stdout:" >&2
	head -40 "$out" >&2
	echo "--- stderr:" >&2
	head -20 "$err" >&2
	exit 1
}

count_type() {
	grep -cE "^ *[0-9]+: $1 " "$out"
}

# Structure every Graphviz file we emit must have (and dot must accept, when installed).
check_dot() {
	head -1 "$out" | grep -q '^digraph [A-Za-z_][A-Za-z0-9_]* {$' || fail "does not start with digraph"
	[ "$(tail -1 "$out")" = "}" ] || fail "does not end with }"
	opens=$(tr -cd '{' <"$out" | wc -c)
	closes=$(tr -cd '}' <"$out" | wc -c)
	[ "$opens" -eq "$closes" ] || fail "unbalanced braces: $opens { vs $closes }"
	grep -qE '^ *r[0-9]+_s[0-9]+ -> r[0-9]+_s[0-9]+' "$out" || fail "no edge lines"
	# Every statement line ends with ; or is a brace line.
	if grep -vE '(;|\{|\})$' "$out" | grep -q .; then
		fail "a line is neither a statement nor a brace"
	fi
	if command -v dot >/dev/null 2>&1; then
		dot -Tsvg "$out" -o /dev/null 2>"$err" || fail "dot rejects the output"
	fi
}

case $case_name in
text)
	# Ring allreduce at 4 ranks, one segment per chunk: 2(n-1) sends, n-1 receive-reduces
	# in the reduce-scatter, each combining SEND's bytes with the incoming (not in place:
	# no copy of the input first), n-1 receives in the allgather.
	"$ws" allreduce --algo ring --ranks 4 --rank 3 --count 1000 --dtype float32 >"$out" 2>"$err" ||
		fail "exit $?"
	head -1 "$out" | grep -q '^plan ring allreduce count 1000' || fail "no plan header"
	[ "$(count_type SEND)" -eq 6 ] || fail "want 6 SEND steps, got $(count_type SEND)"
	[ "$(count_type RECV_REDUCE)" -eq 3 ] || fail "want 3 RECV_REDUCE, got $(count_type RECV_REDUCE)"
	[ "$(count_type RECV)" -eq 3 ] || fail "want 3 RECV, got $(count_type RECV)"
	[ "$(count_type COPY)" -eq 0 ] || fail "want no COPY, got $(count_type COPY)"
	[ "$(grep -c 'RECV_REDUCE.* = SEND\[[0-9]*\] op' "$out")" -eq 3 ] ||
		fail "want 3 RECV_REDUCE = SEND[off] op"
	# Suffixes: 1K elements in 4 chunks of 256 floats = 1024 bytes each.
	"$ws" allreduce --algo ring --ranks 4 --count 1K >"$out" 2>"$err" || fail "1K: exit $?"
	grep -q 'SEND\[0+1024\]' "$out" || fail "1K elements did not make 1024-byte chunks"
	# Compression: messages come from the 16-bit mirror, with conversion steps.
	"$ws" allreduce --algo ring --ranks 4 --count 1000 --compress bf16 >"$out" 2>"$err" ||
		fail "compress: exit $?"
	grep -q 'compress bf16' "$out" || fail "compress not in the header"
	[ "$(count_type NARROW)" -gt 0 ] || fail "no NARROW steps"
	[ "$(count_type REDUCE_WIDEN)" -eq 3 ] || fail "want 3 REDUCE_WIDEN"
	if grep -E '^ *[0-9]+: SEND ' "$out" | grep -qv SCRATCH; then
		fail "a compressed send does not come from SCRATCH"
	fi
	"$ws" --list >"$out" 2>"$err" || fail "--list: exit $?"
	grep -q '^allreduce .*ring' "$out" || fail "--list lacks allreduce ring"
	;;
dot)
	"$ws" allreduce --algo ring --ranks 4 --rank 1 --count 1000 --dot >"$out" 2>"$err" ||
		fail "exit $?"
	check_dot
	;;
all_ranks)
	"$ws" allreduce --algo ring --ranks 4 --count 1000 --all-ranks --dot >"$out" 2>"$err" ||
		fail "exit $?"
	check_dot
	[ "$(grep -c '^  subgraph cluster_rank' "$out")" -eq 4 ] || fail "want 4 clusters"
	# 6 sends per rank, each paired with its receive: 24 message edges, each from a rank to
	# its ring successor.
	msgs=$(grep -cE '^  r[0-9]+_s[0-9]+ -> r[0-9]+_s[0-9]+ \[style=dashed' "$out")
	[ "$msgs" -eq 24 ] || fail "want 24 message edges, got $msgs"
	bad=$(grep -E '^  r[0-9]+_s[0-9]+ -> r[0-9]+_s[0-9]+ \[style=dashed' "$out" |
		sed -E 's/^  r([0-9]+)_s[0-9]+ -> r([0-9]+)_.*/\1 \2/' |
		awk '($1 + 1) % 4 != $2' | wc -l)
	[ "$bad" -eq 0 ] || fail "$bad message edges do not go to the ring successor"
	# Text form of every rank.
	"$ws" allreduce --algo ring --ranks 3 --count 99 --all-ranks >"$out" 2>"$err" ||
		fail "text: exit $?"
	[ "$(grep -c '^plan ring' "$out")" -eq 3 ] || fail "want 3 plans"
	;;
simulate)
	"$ws" allreduce --algo ring --ranks 1024 --count 1M --simulate >"$out" 2>"$err" ||
		fail "exit $?"
	grep -qE '^estimated time: [0-9]+\.[0-9]+ us' "$out" || fail "no estimated time"
	# Ring allreduce of a vector too large to pipeline the first segment: the simulation
	# matches the closed form 2(n-1)(alpha + m/n beta) + (n-1) m/n gamma to 0.1%.
	t=$(sed -nE 's/^estimated time: ([0-9.]+) us.*/\1/p' "$out")
	c=$(sed -nE 's/^closed-form estimate: ([0-9.]+) us/\1/p' "$out")
	awk -v t="$t" -v c="$c" 'BEGIN { d = t - c; if (d < 0) d = -d; exit !(c > 0 && d <= c * 0.001) }' ||
		fail "simulated $t us vs closed form $c us"
	# A cost model changes the answer and the default choice still simulates.
	"$ws" allreduce --ranks 64 --count 4K --cost 2,25,50 --simulate >"$out" 2>"$err" ||
		fail "cost: exit $?"
	grep -q 'alpha 2.000 us' "$out" || fail "--cost not applied"
	;;
slots)
	# The shared-slot allreduce at 4 ranks: our turn and a SLOT_FREE per peer, one PUT, a
	# SLOT_WAIT per peer, the sum in rank order (3 slot reads, our own term from SEND) and
	# one release; no message at all.
	"$ws" allreduce --algo slots --ranks 4 --rank 2 --count 2 >"$out" 2>"$err" ||
		fail "exit $?"
	head -1 "$out" | grep -q '^plan slots allreduce count 2' || fail "no plan header"
	[ "$(count_type SLOT_FREE)" -eq 4 ] || fail "want 4 SLOT_FREE, got $(count_type SLOT_FREE)"
	[ "$(count_type SLOT_PUT)" -eq 1 ] || fail "want 1 SLOT_PUT"
	[ "$(count_type SLOT_WAIT)" -eq 3 ] || fail "want 3 SLOT_WAIT"
	[ "$(count_type SLOT_COPY)" -eq 1 ] || fail "want 1 SLOT_COPY (rank 0's term)"
	[ "$(count_type SLOT_REDUCE)" -eq 2 ] || fail "want 2 SLOT_REDUCE"
	[ "$(count_type REDUCE)" -eq 1 ] || fail "want our own term as 1 REDUCE"
	grep -qE '^ *[0-9]+: SLOT_DONE' "$out" || fail "no SLOT_DONE"
	if grep -qE '^ *[0-9]+: (SEND|RECV)' "$out"; then fail "a slot plan sends messages"; fi
	# Chosen by the cost model for tiny vectors when the ranks share slots, never without.
	"$ws" allreduce --ranks 4 --count 2 --slots --cost 1.5,6,8 >"$out" 2>"$err" ||
		fail "cost + slots: exit $?"
	head -1 "$out" | grep -q '^plan slots ' || fail "the cost model did not pick slots"
	"$ws" allreduce --ranks 4 --count 2 --cost 1.5,6,8 >"$out" 2>"$err" ||
		fail "cost: exit $?"
	if head -1 "$out" | grep -q '^plan slots '; then fail "slots picked without slots"; fi
	"$ws" allreduce --ranks 4 --count 1M --slots --cost 1.5,6,8 >"$out" 2>"$err" ||
		fail "large: exit $?"
	if head -1 "$out" | grep -q '^plan slots '; then fail "slots picked for 4 MiB"; fi
	# With more ranks than cores' prices, an alltoall of 256 KiB blocks goes through the
	# slots, unless an exchange's receives go by get from 128 KiB (--cost's fifth number).
	"$ws" alltoall --ranks 4 --count 64K --slots=1049696 --cost 9.75,6,8,0.3 >"$out" \
		2>"$err" || fail "alltoall: exit $?"
	head -1 "$out" | grep -q '^plan slots ' || fail "alltoall of 256 KiB blocks left the slots"
	"$ws" alltoall --ranks 4 --count 64K --slots=1049696 --cost 9.75,6,8,0.3,128 >"$out" \
		2>"$err" || fail "alltoall, get: exit $?"
	head -1 "$out" | grep -q '^plan pairwise ' || fail "alltoall by get did not go pairwise"
	if "$ws" alltoall --ranks 4 --count 64K --cost 9.75,6,8,0.3,0 >"$out" 2>"$err"; then
		fail "--cost with xchg_get_KiB 0 accepted"
	fi
	# Graphviz: a green edge from every PUT to each SLOT_WAIT on it (4 ranks x 3 peers).
	"$ws" allreduce --algo slots --ranks 4 --count 2 --all-ranks --dot >"$out" 2>"$err" ||
		fail "dot: exit $?"
	check_dot
	[ "$(grep -c 'color=green' "$out")" -eq 12 ] || fail "want 12 slot edges"
	# Simulated: the flags take a tenth of alpha; every rank is done after its peers' PUTs.
	"$ws" broadcast --algo slots --ranks 8 --count 1K --cost 1,6,8 --simulate >"$out" \
		2>"$err" || fail "simulate: exit $?"
	grep -q '0 messages' "$out" || fail "the simulation counts messages"
	grep -q '1 slot publications' "$out" || fail "broadcast publishes once"
	t=$(sed -nE 's/^estimated time: ([0-9.]+) us.*/\1/p' "$out")
	awk -v t="$t" 'BEGIN { exit !(t > 0.1 && t < 5) }' || fail "simulated $t us"
	# In parts (slots of 263264 bytes): each part's waits are met by that part's PUT, and the
	# root publishes part k after releasing part k-1. The root is done after copying the
	# whole vector in (gamma 8 GB/s), a reader a flag (0.1 us) and its copy of the last part
	# later. 1 MiB: 4 parts, the last of 258784 bytes; 2 MiB: 8 parts, more than the ring of
	# 4 holds (part k reuses part k-4's slot), the last of 254304 bytes.
	for c in 262144:1048576:258784 524288:2097152:254304; do
		"$ws" broadcast --algo slots --ranks 4 --count "${c%%:*}" --cost 1,6,8 --simulate \
			>"$out" 2>"$err" || fail "simulate parts: exit $?"
		b=${c#*:}
		last=${b#*:}
		b=${b%%:*}
		t=$(sed -nE 's/^estimated time: ([0-9.]+) us \(first rank done at ([0-9.]+) us\)/\1 \2/p' \
			"$out")
		awk -v t="$t" -v b="$b" -v l="$last" 'BEGIN {
			split(t, x, " "); root = b / 8e3; end = root + 0.1 + l / 8e3
			exit !(x[2] > root - 0.002 && x[2] < root + 0.002 &&
			       x[1] > end - 0.002 && x[1] < end + 0.002) }' ||
			fail "broadcast of $b bytes in parts simulated as $t us"
	done
	# Forced without slots: refused with the reason.
	"$ws" allreduce --algo slots --ranks 4 --count 2 --slots=0 >"$out" 2>"$err"
	[ $? -eq 2 ] || fail "--slots=0 accepted"
	;;
bad_args)
	for args in "allreduce --ranks 0" "nosuchcoll" "allreduce --dtype float7" \
		"allreduce --op median" "allreduce --algo nosuch" "allreduce --count 12Q" \
		"allreduce --rank 4 --ranks 4" "allreduce --compress fp8" "allreduce --cost 1,2" \
		"allreduce --bogus" "" "allreduce broadcast" "allreduce --seg-bytes -1"; do
		# shellcheck disable=SC2086
		"$ws" $args >"$out" 2>"$err"
		rc=$?
		[ "$rc" -eq 2 ] || fail "'$args' exited $rc, want 2"
		[ -s "$err" ] || fail "'$args' printed no message"
	done
	"$ws" -h >"$out" 2>"$err" || fail "-h exited $?"
	grep -q usage "$out" || fail "-h prints no usage"
	;;
*)
	echo "unknown case $case_name" >&2
	exit 2
	;;
esac
exit 0
