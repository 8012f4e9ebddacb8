#!/usr/bin/env bash
# make fuzz: every fuzz target of the module (each `func FuzzX(f
# *testing.F)` in a _test.go file), one after the other, each for
# FUZZTIME (default 10m), so that a target added to the tree is fuzzed
# without anyone remembering to list it. Stops at the first failure (the
# fuzzer has then written the input under the package's testdata/fuzz/,
# to be checked in once fixed). Ends with each target's executions.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10m}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
summary=()
while IFS=: read -r file name; do
	pkg=./$(dirname "$file")
	echo "== $pkg $name ($FUZZTIME)"
	"$GO" test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 5s "$pkg" 2>&1 | tee "$log"
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
	summary+=("$(printf '%-24s %-10s %s executions' "$name" "$pkg" "${execs:-?}")")
done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' . | sed 's/^\.\///; s/:func \(Fuzz[A-Za-z0-9_]*\).*/:\1/' | sort)
echo
echo "fuzzed for $FUZZTIME each:"
printf '  %s\n' "${summary[@]}"
