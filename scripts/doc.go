// Package scripts holds the tests of the shell scripts beside it
// (deps.sh: what make test installs on a fresh machine).
package scripts
