#!/usr/bin/env python3
"""Sums Meson test logs (testlog.json, one JSON object per line) into the closing line
CI reads: 'tests: N passed, N failed' (plus ', N skipped'). Exits 1 if anything failed
or a log is missing."""
import json
import sys

passed = failed = skipped = 0
missing = []
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError:
        missing.append(path)
        continue
    for line in lines:
        line = line.strip()
        if not line:
            continue
        res = json.loads(line).get("result", "")
        if res in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif res == "SKIP":
            skipped += 1
        else:
            failed += 1
for m in missing:
    print(f"testsum: no test log at {m} (build or setup failed)", file=sys.stderr)
    failed += 1
line = f"tests: {passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
sys.exit(1 if failed else 0)
