// The subtree filters (FTRACE_GRAPH_FUNCS, FTRACE_GRAPH_NOTRACE) and C++
// exceptions: chosen and notrace calls left by a throw, with destructors
// that make traced calls while the stack unwinds. Names say what a test
// expects under
//
//   FTRACE_GRAPH_FUNCS='c_*'   FTRACE_GRAPH_NOTRACE='q_*'
//
// as in subtree.c: c_* chosen, q_* notrace, w_* called only inside c_*
// calls (outside q_* ones) and so recorded, o_* never recorded. Prints
// what it caught; exits with status 4.
#include <cstdio>

#include "attrs.h"

static volatile long sink;

NOINLINE long w_leaf(long x)
{
	sink += x;
	return x + 1;
}

NOINLINE long o_leaf(long x)
{
	sink += x;
	return x + 2;
}

NOINLINE void w_throw(long x)
{
	sink += x;
	throw x;
}

// Its destructor runs while an exception unwinds the frame that holds it.
struct WGuard {
	long x;
	NOINLINE ~WGuard() { sink += w_leaf(x); }
};

struct OGuard {
	long x;
	NOINLINE ~OGuard() { sink += o_leaf(x); }
};

// A chosen call left by a throw caught outside every chosen call; its
// local's destructor runs inside it.
NOINLINE void c_left(long x)
{
	WGuard g{x};
	w_leaf(x);
	w_throw(x);
	sink += x;
}

// A chosen call that catches what it called threw.
NOINLINE long c_catch(long x)
{
	long r = 0;
	try {
		w_throw(x);
	} catch (long e) {
		r = w_leaf(e);
	}
	return r + w_leaf(x);
}

// A notrace call left by a throw caught inside a chosen call: recording
// resumes there. Its local's destructor runs inside it, unrecorded.
NOINLINE void q_throw(long x)
{
	OGuard g{x};
	o_leaf(x);
	throw x;
}

NOINLINE long c_host(long x)
{
	long r = 0;
	try {
		q_throw(x);
	} catch (long e) {
		r = w_leaf(e);
	}
	return r + w_leaf(x + 1);
}

int main()
{
	long caught = 0;
	try {
		c_left(1);
	} catch (long e) {
		caught += e + o_leaf(e); // outside again
	}
	caught += c_catch(2) + o_leaf(3) + c_host(4) + o_leaf(5);
	std::printf("caught %ld sink %ld\n", caught, static_cast<long>(sink));
	return 4;
}
