#!/usr/bin/env bash
# deps.sh [bench]: installs what ftpatch's tests need, when something is
# missing, from Debian's packages: the compilers and binutils of both
# architectures (gcc, clang, lld and the arm64 cross compiler), qemu-user
# to run the arm64 programs, cmake (the compiler wrapper's tests),
# rsvg-convert (the flame graph's pixel tests), pkg-config (a program
# built with the ftrt.pc make install installs), autoconf, automake
# and libtool (a libtool project's wrapper scripts), and uftrace (whose
# record of the Lua interpreter's library calls the Lua test compares
# with ftpatch's); a deb-src entry for the source packages the Lua and
# wrapper tests build. With `bench`, also what `make bench` compares
# against: the kernel's recordmcount (linux-kbuild-6.1) and LLVM XRay's
# runtime (uftrace, already there).
#
# It runs `apt-get update` once, and only when it installs something.
# Entries it adds to apt's sources (deb-src; bookworm-backports, whose
# qemu-user 10 the live tests need) use the archive address the system's
# own sources already give for Debian's main component, so a mirror or
# proxy the machine uses keeps working. It needs root, or sudo; it says
# what it could not do and exits non-zero otherwise.
#
# FTPATCH_DEPS_ROOT (tests only) is a directory standing in for / for
# the files it reads and writes (etc/apt, etc/os-release, the cross
# compiler's C library, the bench tools' files).
set -euo pipefail

root=${FTPATCH_DEPS_ROOT:-}
apt_dir=$root/etc/apt

die() {
	echo "deps.sh: $*" >&2
	exit 1
}

# tool -> Debian package
declare -A pkg=(
	[gcc]=gcc
	[g++]=g++
	[as]=binutils
	[make]=make
	[cmake]=cmake
	[xz]=xz-utils
	[readelf]=binutils
	[objdump]=binutils
	[clang]=clang
	[clang++]=clang
	[ld.lld]=lld
	[llvm-readelf]=llvm
	[aarch64-linux-gnu-gcc]=gcc-aarch64-linux-gnu
	[aarch64-linux-gnu-g++]=g++-aarch64-linux-gnu
	[aarch64-linux-gnu-objdump]=binutils-aarch64-linux-gnu
	[qemu-aarch64]=qemu-user
	[rsvg-convert]=librsvg2-bin
	[pkg-config]=pkgconf
	[autoreconf]=autoconf
	[automake]=automake
	[libtoolize]=libtool
	[uftrace]=uftrace
	[sqlite3]=sqlite3
)

# package -> why the tests need it (the one line printed before installing)
declare -A why=(
	[gcc]="builds the runtime and the test programs"
	[g++]="C++ test programs"
	[binutils]="assembles and inspects the test programs"
	[make]="the build"
	[cmake]="the compiler wrapper's tests"
	[xz-utils]="unpacks source packages"
	[clang]="clang-built test programs"
	[lld]="programs linked by lld"
	[llvm]="llvm-readelf, to check what lld links"
	[gcc-aarch64-linux-gnu]="arm64 test programs"
	[g++-aarch64-linux-gnu]="arm64 C++ test programs"
	[binutils-aarch64-linux-gnu]="arm64 objdump"
	[libc6-dev-arm64-cross]="the arm64 C library"
	[qemu-user]="runs the arm64 test programs"
	[librsvg2-bin]="draws the flame graphs the views' tests check"
	[pkgconf]="builds a program with the installed ftrt.pc (make install's test)"
	[autoconf]="builds the libtool test project"
	[automake]="builds the libtool test project"
	[libtool]="the libtool test project's wrapper scripts"
	[linux-kbuild-6.1]="the kernel's recordmcount, for make bench"
	[uftrace]="the library calls the Lua test compares with ftpatch's (and make bench)"
	[sqlite3]="a program nobody built for tracing, traced through sites made from its prologues"
	[libclang-rt-14-dev]="LLVM XRay's runtime, for make bench"
	[tcl]="makes sqlite3's amalgamation, for make bench's coverage of programs built without tracing flags"
)

missing=()
for t in "${!pkg[@]}"; do
	command -v "$t" >/dev/null 2>&1 || missing+=("${pkg[$t]}")
done
[ -e "$root/usr/aarch64-linux-gnu/lib/libc.so.6" ] || missing+=(libc6-dev-arm64-cross)
if [ "${1:-}" = bench ]; then
	[ -x "$root/usr/lib/linux-kbuild-6.1/scripts/recordmcount" ] || missing+=(linux-kbuild-6.1)
	compgen -G "$root/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.xray-x86_64.a" >/dev/null || missing+=(libclang-rt-14-dev)
	command -v tclsh >/dev/null 2>&1 || missing+=(tcl)
fi

codename=$(sed -n 's/^VERSION_CODENAME=//p' "$root/etc/os-release" 2>/dev/null | tr -d '"' || true)
[ -n "$codename" ] || die "cannot tell the Debian release: no VERSION_CODENAME in $root/etc/os-release"

# The files apt reads its sources from, as apt does (*.list and *.sources).
source_files() {
	local f
	for f in "$apt_dir/sources.list" "$apt_dir"/sources.list.d/*.list "$apt_dir"/sources.list.d/*.sources; do
		[ -f "$f" ] && printf '%s\n' "$f"
	done
	return 0
}

# debian_source prints "URI<TAB>KEYRING" of the first configured source
# of $codename's main component (KEYRING empty where none is named).
debian_source() {
	local f
	while read -r f; do
		case $f in
		*.sources)
			awk -v suite="$codename" '
				function flush() {
					if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && (" " comps " ") ~ / main /) {
						split(uris, u, " "); printf "%s\t%s\n", u[1], key; found = 1; exit
					}
					types = uris = suites = comps = key = ""
				}
				/^[ \t]*$/ { flush(); next }
				/^#/ { next }
				{ k = tolower($1); sub(/^[^:]*:[ \t]*/, "") }
				k == "types:" { types = $0 } k == "uris:" { uris = $0 } k == "suites:" { suites = $0 }
				k == "components:" { comps = $0 } k == "signed-by:" { key = $0 }
				END { if (!found) flush() }' "$f"
			;;
		*)
			awk -v suite="$codename" '
				$1 != "deb" { next }
				{ opts = ""; i = 2 }
				$2 ~ /^\[/ { while (i <= NF && opts !~ /\]$/) { opts = opts " " $i; i++ } }
				$(i + 1) != suite { next }
				{ main = 0; for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1 }
				!main { next }
				{ key = ""; if (match(opts, /signed-by=[^] ]*/)) key = substr(opts, RSTART + 10, RLENGTH - 10)
				  printf "%s\t%s\n", $i, key; exit }' "$f"
			;;
		esac
	done < <(source_files) | head -n 1
}

# has_source TYPE SUITE: some configured source of that type lists SUITE.
has_source() {
	local f
	while read -r f; do
		case $f in
		*.sources)
			awk -v t="$1" -v s="$2" '
				function flush() { if ((" " types " ") ~ (" " t " ") && (" " suites " ") ~ (" " s " ")) { found = 1; exit } types = suites = "" }
				/^[ \t]*$/ { flush(); next }
				/^#/ { next }
				{ k = tolower($1); sub(/^[^:]*:[ \t]*/, "") }
				k == "types:" { types = $0 } k == "suites:" { suites = $0 }
				END { if (!found) flush(); exit !found }' "$f" && return 0
			;;
		*)
			awk -v t="$1" -v s="$2" '
				$1 != t { next }
				{ i = 2 } $2 ~ /^\[/ { while (i <= NF && $i !~ /\]$/) i++; i++ }
				$(i + 1) == s { found = 1; exit }
				END { exit !found }' "$f" && return 0
			;;
		esac
	done < <(source_files)
	return 1
}

sudo=
if [ "$(id -u)" -ne 0 ]; then
	sudo=sudo
fi

# add_source NAME TYPE SUITE: writes sources.list.d/ftpatch-NAME.sources.
add_source() {
	local src uri key
	src=$(debian_source)
	[ -n "$src" ] || die "no Debian source for $codename main in $apt_dir (sources.list, sources.list.d/*.list or *.sources): cannot add the $2 $3 entry"
	uri=${src%%$'\t'*}
	key=${src#*$'\t'}
	echo "deps.sh: adding $2 $3 main from $uri to $apt_dir/sources.list.d/ftpatch-$1.sources"
	{
		echo "Types: $2"
		echo "URIs: $uri"
		echo "Suites: $3"
		echo "Components: main"
		[ -z "$key" ] || echo "Signed-By: $key"
	} | $sudo tee "$apt_dir/sources.list.d/ftpatch-$1.sources" >/dev/null || die "could not write $apt_dir/sources.list.d/ftpatch-$1.sources"
}

# Debian's source packages: the Lua test builds the interpreter from
# `apt-get source lua5.4`, the compiler wrapper's tests libogg and cJSON
# from theirs, which needs a deb-src entry.
new_sources=()
has_source deb-src "$codename" || new_sources+=("src deb-src $codename")

# qemu-user 10 or later: it drops what it translated from code at the
# program's `ic ivau`, so an arm64 program that changes its own code
# while it runs (the live tests) runs as on a kernel; bookworm's 7.2
# keeps running the old code, so there it comes from bookworm-backports.
backports=
qemu_version=$(qemu-aarch64 --version 2>/dev/null || true)
qemu_major=$(printf '%s\n' "$qemu_version" | sed -n 's/^qemu-aarch64 version \([0-9]*\).*/\1/p')
if [ "${qemu_major:-0}" -lt 10 ] && [ "$codename" = bookworm ]; then
	backports=qemu-user
	has_source deb bookworm-backports || new_sources+=("backports deb bookworm-backports")
fi
[ "${qemu_major:-0}" -ge 10 ] || [ "$codename" = bookworm ] || missing+=(qemu-user)

filtered=()
for p in "${missing[@]}"; do
	[ "$p" = "$backports" ] || filtered+=("$p")
done
mapfile -t missing < <(printf '%s\n' "${filtered[@]}" | grep . | sort -u || true)

if [ ${#missing[@]} -eq 0 ] && [ ${#new_sources[@]} -eq 0 ] && [ -z "$backports" ]; then
	exit 0
fi

if [ -n "$sudo" ] && ! command -v sudo >/dev/null 2>&1; then
	die "not root and no sudo: cannot install ${missing[*]} ${backports} (run make deps as root)"
fi

for s in "${new_sources[@]}"; do
	# shellcheck disable=SC2086 # three words: name, type, suite
	add_source $s
done

line=()
for p in "${missing[@]}" $backports; do
	line+=("$p (${why[$p]:-needed by the tests})")
done
echo "deps.sh: installing $(IFS=,; echo "${line[*]}" | sed 's/,/, /g')"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# apt_get ARGS...: runs apt-get quietly, showing its output when it fails.
apt_get() {
	if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get "$@" >"$log" 2>&1; then
		cat "$log" >&2
		die "apt-get $* failed"
	fi
}
apt_get update -qq
if [ -n "$backports" ]; then
	apt_get install -y -qq --no-install-recommends -t bookworm-backports "$backports"
fi
if [ ${#missing[@]} -gt 0 ]; then
	apt_get install -y -qq --no-install-recommends "${missing[@]}"
fi
