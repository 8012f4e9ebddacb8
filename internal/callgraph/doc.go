// Package callgraph measures how the files of a tree of C and assembly
// (the runtime's, runtime/src) depend on each other: which functions,
// macros and labels each file defines, which of them each file calls or
// takes the address of in another, and which headers it includes. From
// that graph it counts the calls between files, finds the circles of
// files that reach each other, and, given a layer map (Layers), finds
// every call running up from a lower layer into a higher one and every
// circle between layers: the rules the runtime's folders keep.
//
// It reads the sources with a small tokenizer, not a compiler, so it
// needs nothing but Go: comments, strings and preprocessor lines are
// skipped but #include "..." and #define, and code under #if and #else
// is read alike (both architectures' branches count). What it cannot
// see: a call through a function pointer (that is the point of an ops
// table: the door a lower layer calls up through), a name an X-macro
// makes (X(ID, name) in a #define, whose X decides what name becomes),
// and names pasted with ##.
//
// The command is internal/cmd/callgraph.
package callgraph
