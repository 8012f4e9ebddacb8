#!/usr/bin/env bash
# Installs the toolchains ftpatch's tests need, if any is missing (and
# adds Debian's deb-src entry, for the source packages the Lua and
# compiler-wrapper tests build; cmake for the latter): the
# cross compiler and qemu for arm64, clang and lld, binutils for both
# architectures, and rsvg-convert (librsvg), which draws the SVG flame
# graphs the views' tests check pixel by pixel; with the argument
# `bench`, also what `make bench` compares against (the kernel's recordmcount, from linux-kbuild-6.1;
# uftrace; LLVM XRay's runtime). Runs apt-get update once, and only when something is
# missing. Needs root (or sudo) on Debian.
set -euo pipefail

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
)

missing=()
for t in "${!pkg[@]}"; do
	command -v "$t" >/dev/null 2>&1 || missing+=("${pkg[$t]}")
done
# The arm64 C library the cross compiler links against.
[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || missing+=(libc6-dev-arm64-cross)
# `deps.sh bench`: what make bench compares against.
if [ "${1:-}" = bench ]; then
	[ -x /usr/lib/linux-kbuild-6.1/scripts/recordmcount ] || missing+=(linux-kbuild-6.1)
	command -v uftrace >/dev/null 2>&1 || missing+=(uftrace)
	ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.xray-x86_64.a >/dev/null 2>&1 || missing+=(libclang-rt-14-dev)
fi

sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive

# Debian's source packages: the Lua test builds the interpreter from
# `apt-get source lua5.4`, the compiler wrapper's tests libogg and cJSON
# from theirs, which needs a deb-src entry.
update=
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
	echo "adding a deb-src entry for bookworm main"
	$sudo tee /etc/apt/sources.list.d/ftpatch-src.sources >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	update=1
fi

# qemu-user 10, from bookworm-backports: it drops what it translated
# from code at the program's `ic ivau`, so an arm64 program that changes
# its own code while it runs (the live tests) runs as on a kernel;
# bookworm's 7.2 keeps running the old code.
backports=
qemu_major=$(qemu-aarch64 --version 2>/dev/null | sed -n 's/^qemu-aarch64 version \([0-9]*\).*/\1/p')
if [ "${qemu_major:-0}" -lt 10 ]; then
	backports=qemu-user
	missing=("${missing[@]/qemu-user/}")
	if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list.d/ /etc/apt/sources.list; then
		echo "adding bookworm-backports (for qemu-user 10)"
		$sudo tee /etc/apt/sources.list.d/ftpatch-backports.sources >/dev/null <<'BPO'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
BPO
		update=1
	fi
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | grep . | sort -u)

if [ ${#missing[@]} -eq 0 ] && [ -z "$update" ] && [ -z "$backports" ]; then
	exit 0
fi
$sudo apt-get update -qq
if [ -n "$backports" ]; then
	echo "installing from bookworm-backports: $backports"
	$sudo apt-get install -y -qq --no-install-recommends -t bookworm-backports $backports >/dev/null
fi
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
