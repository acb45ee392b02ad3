#!/usr/bin/env bash
# weft-perf integration cases (tests/integration): runs the benchmark under weftrun and checks
# its table, JSON, CSV and SVG. Usage: weft_perf_test.sh CASE WEFTRUN WEFT_PERF
. "$(dirname "$0")/prelude.sh"

command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }

SIZES="8 32 128 512 2048 8192 32768" # -b 8 -e 64K -f 4
SMALL=(-b 8 -e 64K -f 4 -n 5 -w 1 -c 1)

# Runs weft-perf on N ranks with every report file; must exit 0.
run() {
	local n=$1
	shift
	timeout 25 "$weftrun" -n "$n" "$perf" "$@" --json "$dir/r.json" --csv "$dir/r.csv" \
		--plot "$dir/r.svg" >"$out" 2>"$err"
	local rc=$?
	[ "$rc" -eq 0 ] || fail "weft-perf -n $n $* exited $rc"
}

# Data rows: "collective size count type op root time algbw busbw wrong".
rows() {
	awk '/^# collective: / { c = $3 } /^ +[0-9]/ { print c, $0 }' "$out"
}

check_table() {
	local want_rows=$1
	local got
	got=$(rows | wc -l)
	[ "$got" -eq "$want_rows" ] || fail "expected $want_rows rows, got $got"
	rows | awk 'NF != 10 { exit 1 }' || fail "a row does not have 9 columns"
	rows | awk '$10 != "0" { exit 1 }' || fail "a row has #wrong != 0"
	grep -q '^# Out of bounds values : 0 OK$' "$out" || fail "no 'Out of bounds values : 0 OK'"
}

# Every size of the sweep appears once for COLL (sizes as printed: the allreduce sizes).
check_sizes() {
	local coll=$1
	local got
	got=$(rows | awk -v c="$coll" '$1 == c { printf "%s ", $2 }')
	[ "$got" = "$SIZES " ] || fail "$coll sizes '$got', want '$SIZES '"
}

check_files() {
	local want_rows=$1 ranks=$2
	python3 - "$dir" "$want_rows" "$ranks" <<'PY' || fail "report files are wrong"
import csv, json, sys
import xml.etree.ElementTree as ET
d, want, ranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
j = json.load(open(d + "/r.json"))
assert j["meta"]["ranks"] == ranks, j["meta"]
assert "iters_by_size" in j["meta"], j["meta"]
assert j["meta"]["timing"] == "slowest_rank", j["meta"]
for k in ("weft_version", "date", "hostname"):
    assert j["meta"][k], k
assert len(j["rows"]) == want, len(j["rows"])
for r in j["rows"]:
    assert r["wrong"] == 0, r
    assert r["time_us"] > 0 or r["size_bytes"] == 0, r
    for k in ("collective", "size_bytes", "count", "type", "op", "root", "algbw_gbps",
              "busbw_gbps"):
        assert k in r, k
with open(d + "/r.csv", newline="") as f:
    lines = list(csv.reader(f))
assert lines[0][:3] == ["collective", "size_bytes", "count"], lines[0]
assert len(lines) == want + 1, len(lines)
for row, jr in zip(lines[1:], j["rows"]):
    assert len(row) == len(lines[0]), row
    assert row[0] == jr["collective"] and int(row[1]) == jr["size_bytes"], (row, jr)
    assert int(row[lines[0].index("ranks")]) == ranks
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(d + "/r.svg").getroot()
assert root.tag == ns + "svg", root.tag
lines = root.findall(".//" + ns + "polyline")
assert len(lines) >= 2, len(lines)
texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
for w in ("busbw", "time", "message size"):
    assert w in texts, w
colls = {r["collective"] for r in j["rows"]}
for c in colls:
    assert c in texts, "legend lacks " + c
PY
}

# A bad value of the test hook VAR is refused before the sweep, on every rank, naming VAR.
bad_hook() {
	local var=$1 v rc
	shift
	for v in "$@"; do
		env "$var=$v" timeout 25 "$weftrun" -n 2 "$perf" allreduce -b 8 -e 8 >"$out" 2>"$err"
		rc=$?
		[ "$rc" -eq 2 ] || fail "$var=$v exited $rc, want 2"
		grep -q "$var" "$err" || fail "$var=$v: no message"
	done
}

case "$case_name" in
allreduce_n2 | allreduce_n3)
	n=${case_name##*_n}
	run "$n" allreduce "${SMALL[@]}"
	check_table 7
	check_sizes allreduce
	grep -qE '^ +8 +2 +float +sum +-1 ' "$out" || fail "first row is not '8 2 float sum -1'"
	check_files 7 "$n"
	;;
all_n2 | all_n3)
	n=${case_name##*_n}
	run "$n" all "${SMALL[@]}"
	check_table $((9 * 7 + 1))
	for c in allreduce broadcast reduce sendrecv; do
		check_sizes "$c"
	done
	for c in allgather reduce_scatter gather scatter alltoall; do
		got=$(rows | awk -v c="$c" '$1 == c' | wc -l)
		[ "$got" -eq 7 ] || fail "$c has $got rows"
		# nccl-tests' size for these: the whole buffer, count = size / 4 / ranks.
		rows | awk -v c="$c" -v n="$n" '$1 == c && $2 != $3 * 4 * n { exit 1 }' ||
			fail "$c size is not count * 4 * ranks"
	done
	rows | awk '$1 == "barrier"' | grep -q . || fail "no barrier row"
	check_files $((9 * 7 + 1)) "$n"
	;;
dtypes_ops_async)
	# Every dtype and op, 3 requests in flight, odd rank count.
	run 3 allreduce reduce_scatter reduce -d all -o all -a 3 -b 8 -e 512 -f 8 -n 3 -w 1
	check_table $((3 * 10 * 5 * 3))
	check_files $((3 * 10 * 5 * 3)) 3
	# More requests in flight than iterations: only the result buffers a call was given
	# are checked (the others used to count every element wrong).
	run 3 allreduce allgather -a 4 -b 8 -e 512 -f 8 -n 2 -w 1
	check_table $((2 * 3))
	;;
iters_by_size_n2)
	# --iters-by-size: every row runs its band's iterations, and says so in JSON and CSV
	# (sizes up to 512 B: 7 after 2; up to 8K: 4 after 0; larger: 3 after 1).
	run 2 allreduce allgather -b 8 -e 64K -f 4 -c 1 --iters-by-size 512:7:2,8K:4:0,16K:3:1
	check_table 14
	grep -q '^# iterations by size: up to 512 bytes: warmup iters: 2 iters: 7$' "$out" ||
		fail "the header does not list the first band"
	grep -q '^# iterations by size: larger: warmup iters: 1 iters: 3$' "$out" ||
		fail "the header does not list the last band"
	python3 - "$dir" <<'PY' || fail "per-row iterations are wrong"
import csv, json, sys
d = sys.argv[1]
def band(size):
    return (7, 2) if size <= 512 else (4, 0) if size <= 8192 else (3, 1)
j = json.load(open(d + "/r.json"))
assert j["meta"]["iters_by_size"] == [
    {"max_bytes": 512, "iters": 7, "warmup_iters": 2},
    {"max_bytes": 8192, "iters": 4, "warmup_iters": 0},
    {"max_bytes": None, "iters": 3, "warmup_iters": 1}], j["meta"]["iters_by_size"]
assert j["meta"]["time_budget_s"] is None, j["meta"]
assert len(j["rows"]) == 14, len(j["rows"])
for r in j["rows"]:
    # allgather's size is the whole buffer, as nominal: the band follows the sweep's size
    assert (r["iters"], r["warmup_iters"]) == band(r["size_bytes"]), r
with open(d + "/r.csv", newline="") as f:
    rows = list(csv.DictReader(f))
for row, jr in zip(rows, j["rows"]):
    assert (int(row["iters"]), int(row["warmup_iters"])) == (jr["iters"], jr["warmup_iters"])
PY
	check_files 14 2
	;;
time_budget_n2)
	# -T: bands far too long for 0.01 s a size are cut, the same on both ranks (a count
	# that differed would hang the run), blocking and with requests in flight.
	for async in 0 4; do
		run 2 allreduce allgather -b 8 -e 64K -f 16 -c 1 -a "$async" -N 0:100000:50 -T 0.01
		check_table 8
		grep -q '^# time budget per size: 0.01 s' "$out" || fail "the header lacks the budget"
		python3 - "$dir" <<'PY' || fail "-T rows are wrong (-a $async)"
import csv, json, sys
d = sys.argv[1]
j = json.load(open(d + "/r.json"))
assert j["meta"]["time_budget_s"] == 0.01, j["meta"]
assert len(j["rows"]) == 8, len(j["rows"])
for r in j["rows"]:
    # cut, but never below the floor of 20 timed calls after 5 warm-ups
    assert 20 <= r["iters"] < 100000, r
    assert 5 <= r["warmup_iters"] <= 50, r
    assert r["wrong"] == 0, r
with open(d + "/r.csv", newline="") as f:
    rows = list(csv.DictReader(f))
for row, jr in zip(rows, j["rows"]):
    assert (int(row["iters"]), int(row["warmup_iters"])) == (jr["iters"], jr["warmup_iters"])
PY
	done
	check_files 8 2
	;;
span_n2)
	# Rank 1 starts its 5 timed broadcasts 300 ms after rank 0, whose calls do not wait
	# for it (the ring has room): each rank's own loop is short, so the per-rank time
	# stays far below 300 ms / 5, while -S spans rank 0's start to rank 1's end.
	for span in "" -S; do
		WEFT_PERF_LATE=1:300 timeout 25 "$weftrun" -n 2 "$perf" broadcast -b 8 -e 8 -n 5 \
			-w 1 -c 1 $span --json "$dir/r.json" >"$out" 2>"$err"
		rc=$?
		[ "$rc" -eq 0 ] || fail "WEFT_PERF_LATE=1:300 broadcast $span exited $rc"
		check_table 1
		if [ -n "$span" ]; then
			grep -q "^# time: from the first rank's first timed call" "$out" ||
				fail "-S: the header does not say how it times"
		fi
		python3 - "$dir" "$span" <<'PY' || fail "the time of a late rank's calls is wrong ($span)"
import json, sys
j = json.load(open(sys.argv[1] + "/r.json"))
span = sys.argv[2] == "-S"
assert j["meta"]["timing"] == ("span" if span else "slowest_rank"), j["meta"]
(r,) = j["rows"]
assert r["iters"] == 5 and r["wrong"] == 0, r
if span:
    assert 60000 <= r["time_us"] < 1e6, r
else:
    assert r["time_us"] < 20000, r
PY
	done
	bad_hook WEFT_PERF_LATE x 1 1:x 1:-5 1:10001 :5 2:5
	;;
bad_args)
	for args in "" "nosuchcoll" "allreduce -b" "allreduce -b 1X" "allreduce -e -5" \
		"allreduce -f 0" "allreduce -f 1" "allreduce -n 0" "allreduce -c 2" \
		"allreduce -d float8" "allreduce -o xor" "allreduce -a -1" "allreduce --bogus" \
		"allreduce -b 2M -e 1M" "allreduce -N 1K" "allreduce -N 1K:0:1" \
		"allreduce -N 1K:5" "allreduce -N 1K:5:-1" "allreduce -N 1X:5:1" "allreduce -N ," \
		"allreduce -T -1" "allreduce -T abc" "allreduce -T inf" "allreduce -T"; do
		# shellcheck disable=SC2086
		"$perf" $args >"$out" 2>"$err"
		rc=$?
		[ "$rc" -eq 2 ] || fail "'weft-perf $args' exited $rc, want 2"
		[ -s "$err" ] || fail "'weft-perf $args' printed no message"
	done
	for v in -1 abc; do
		"$perf" allreduce -T "$v" >"$out" 2>"$err"
		grep -q "bad -T time budget '$v'" "$err" || fail "-T $v: no clear message"
	done
	# A root outside the world is found after start-up; every rank exits 2.
	timeout 25 "$weftrun" -n 2 "$perf" broadcast -r 2 -b 8 -e 8 >"$out" 2>"$err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "root 2 of 2 ranks exited $rc, want 2"
	"$perf" -h >"$out" 2>"$err" || fail "-h exited non-zero"
	grep -q -- '-b, --minbytes' "$out" || fail "-h does not list -b"
	;;
corrupt_n2)
	# WEFT_PERF_CORRUPT=1 makes rank 1 change one element of its result before each check:
	# every row must count exactly that one element and the run must exit 1.
	WEFT_PERF_CORRUPT=1 timeout 25 "$weftrun" -n 2 "$perf" allreduce "${SMALL[@]}" \
		>"$out" 2>"$err"
	rc=$?
	[ "$rc" -eq 1 ] || fail "allreduce with WEFT_PERF_CORRUPT=1 exited $rc, want 1"
	[ "$(rows | wc -l)" -eq 7 ] || fail "expected 7 rows with the hook"
	rows | awk '$10 != "1" { exit 1 }' || fail "a row's #wrong is not 1 with the hook"
	grep -q '^# Out of bounds values : 7 FAILED$' "$out" || fail "no 'Out of bounds values : 7'"
	# The same run without the hook is clean.
	run 2 allreduce "${SMALL[@]}"
	check_table 7
	bad_hook WEFT_PERF_CORRUPT x 2 -1
	;;
*)
	echo "unknown case $case_name" >&2
	exit 1
	;;
esac
echo "ok ($case_name)"
