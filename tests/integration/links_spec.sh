#!/bin/bash
# WEFT_LINKS forms (tests/integration). Two "hosts" by WEFT_HOST_ID (host = RANK % 2),
# 4 ranks.
#   links_spec.sh weftrun init_expect accept SPEC LOCAL REMOTE
#     init and an allreduce succeed; pairs on one host go over LOCAL, others over REMOTE.
#   links_spec.sh weftrun init_expect reject SPEC TEXT
#     every rank's weft_init fails with INVALID_ARG and the logged reason contains TEXT.
set -u
weftrun=$1 init_expect=$2 mode=$3 spec=$4
out=$(mktemp)
trap 'rm -f "$out"' EXIT

expect=(INVALID_ARG)
[ "$mode" = reject ] || expect=(OK --allreduce)
WEFT_LOG_LEVEL=info WEFT_LINKS=$spec "$weftrun" -n 4 --tag-output bash -c \
	'WEFT_HOST_ID=host$((RANK % 2)) exec "$0" "$@"' "$init_expect" "${expect[@]}" >"$out" 2>&1
rc=$?
grep -v " INFO " "$out"
[ $rc -eq 0 ] || { echo "FAIL: WEFT_LINKS='$spec': job exited $rc"; exit 1; }
fails=0
if [ "$mode" = reject ]; then
	text=$5
	n=$(grep -cF -- "$text" "$out")
	[ "$n" -eq 4 ] || { echo "FAIL: $n of 4 ranks logged '$text'"; exit 1; }
	echo "WEFT_LINKS='$spec' refused on every rank: $text"
	exit 0
fi
local_link=$5 remote_link=$6
for r in 0 1 2 3; do
	for s in 0 1 2 3; do
		[ "$r" -ne "$s" ] || continue
		want=$remote_link
		[ $((r % 2)) -ne $((s % 2)) ] || want=$local_link
		grep -q "rank $r reaches rank $s over $want\$" "$out" || {
			echo "FAIL: rank $r does not reach rank $s over $want:" \
				"$(grep "rank $r reaches rank $s " "$out")"
			fails=$((fails + 1))
		}
	done
done
[ $fails -eq 0 ] || exit 1
echo "WEFT_LINKS='$spec': $local_link within a host, $remote_link between hosts"
