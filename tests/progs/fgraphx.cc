// Graph users and C++ exceptions: a user whose filter chooses thrower
// and middle, whose returns it hooks, while an exception thrown two calls
// down is caught above them; and calls after. The calls left run no
// retfunc; the exception is caught as without the user. Prints:
//
//   caught 42: 0 returns of the calls left, then middle(1) = 2 and 2 returns
#include <cstdio>
#include <stdexcept>

#include <ftrace.h>

static volatile long zero;
static int returns;

__attribute__((noinline)) long thrower(long x)
{
	if (x == 0)
		throw std::runtime_error("42");
	return x + zero;
}

__attribute__((noinline)) long middle(long x)
{
	return thrower(x) + 1 + zero;
}

static void ret(struct ftrace_graph_ret *, struct fgraph_ops *, struct ftrace_regs *)
{
	returns++;
}

int main()
{
	static struct fgraph_ops g = {};
	g.retfunc = ret;
	if (ftrace_set_filter(&g.ops, "_Z7throwerl,_Z6middlel", 1) < 0 || register_fgraph(&g)) {
		std::fprintf(stderr, "register: %s\n", ftrace_error());
		return 2;
	}
	try {
		middle(0);
	} catch (const std::exception &e) {
		int left = returns;
		long r = middle(1);
		std::printf("caught %s: %d returns of the calls left, then middle(1) = %ld and %d returns\n", e.what(), left, r,
			    returns - left);
	}
	unregister_fgraph(&g);
	return 0;
}
