#!/bin/sh
# make.sh: rebuilds the wrapper scripts here from src/, a tiny autotools
# project (a program and the libtool library it links), with the
# system's autoconf, automake and libtool (Debian: apt-get install
# autoconf automake libtool), in a fixed directory and with a fixed
# PATH so that the scripts' text does not depend on who made them:
#   needless/      as Debian's libtool builds it: the script runs .libs/hello
#                  with the library's directory in LD_LIBRARY_PATH
#   fast-install/  as libtool builds where LD_LIBRARY_PATH does not
#                  override a run path (lt_cv_shlibpath_overrides_runpath=no):
#                  the script runs .libs/lt-hello, relinked for the build tree
#   libgreet.la    the library's libtool file: a libtool file, but no wrapper
#
#   make -C libtool/testdata && git diff --exit-code libtool/testdata
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=/tmp/ftpatch-libtool-fixture
for kind in needless fast-install; do
	rm -rf "$build"
	mkdir -p "$build"
	cp "$here"/src/configure.ac "$here"/src/Makefile.am "$here"/src/*.c "$build"
	extra=
	if [ "$kind" = fast-install ]; then extra=lt_cv_shlibpath_overrides_runpath=no; fi
	(cd "$build" && env -i PATH=/usr/bin:/bin sh -c "autoreconf -i && ./configure $extra && make") >/dev/null 2>&1 ||
		{ echo "make.sh: building src/ ($kind) in $build failed: are autoconf, automake and libtool installed?" >&2; exit 1; }
	mkdir -p "$here/$kind"
	cp "$build/hello" "$here/$kind/hello"
	if [ "$kind" = needless ]; then cp "$build/libgreet.la" "$here/libgreet.la"; fi
done
rm -rf "$build"
