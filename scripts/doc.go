// Package scripts holds the tests of the shell scripts beside it
// (deps.sh: what make test installs on a fresh machine; install.sh: make
// install and make uninstall).
package scripts
