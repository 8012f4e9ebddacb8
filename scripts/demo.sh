#!/usr/bin/env bash
# make demo: compile the bundled calculator with patch sites, record them
# with recordmcount, link the runtime, show that the linked program's table
# lists every one of its functions, run it untraced (every site a NOP),
# then traced with FTRACE=function_graph, and print the call graph and the
# per-function report.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/demo
rm -rf "$out" && mkdir -p "$out"
CC=${CC:-gcc}
CFLAGS="-O2 -pg -mfentry -fno-inline-small-functions"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step "$CC $CFLAGS -c examples/calc/{parse,main}.c"
$CC $CFLAGS -c examples/calc/parse.c -o $out/parse.o
$CC $CFLAGS -c examples/calc/main.c -o $out/main.o

step "recordmcount --list $out/*.o"
bin/recordmcount --list $out/parse.o $out/main.o

step "recordmcount -v $out/*.o"
bin/recordmcount -v $out/parse.o $out/main.o

step "$CC $out/*.o \$(ftpatch flags --libs) -o $out/calc"
$CC $out/parse.o $out/main.o $(bin/ftpatch flags --libs) -o $out/calc

step "ftpatch sites $out/calc"
bin/ftpatch sites $out/calc | tee $out/sites.txt

# Every function the compiler instrumented must be in the table, once.
want=$(nm --defined-only $out/parse.o $out/main.o | awk '$2 ~ /^[Tt]$/ {print $3}' | sort -u)
got=$(awk 'NR>1 && /^0x/ {sub(/\+.*/, "", $2); print $2}' $out/sites.txt | sort)
if [ "$want" != "$got" ]; then
	echo "demo: the table does not list exactly the program's functions" >&2
	diff <(echo "$want") <(echo "$got") >&2 || true
	exit 1
fi
echo "every function of the program ($(echo "$want" | wc -l)) has exactly one site in the table"

step "FTRACE_DEBUG=1 $out/calc   # nothing set: the runtime turns every site into a NOP before main"
FTRACE_DEBUG=1 "$out/calc" || true

step "FTRACE=function_graph FTRACE_OUT=$out/ftrace.data $out/calc '2 * (3 + 4)'"
FTRACE=function_graph FTRACE_OUT=$out/ftrace.data "$out/calc" '2 * (3 + 4)' || true

step "ftpatch replay $out/ftrace.data"
bin/ftpatch replay $out/ftrace.data

step "ftpatch report $out/ftrace.data"
bin/ftpatch report $out/ftrace.data
