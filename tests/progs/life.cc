// A C++ program whose global objects' constructors and destructors (with
// init_priority and without), a function-local static's, a thread_local's
// of the main thread, a C constructor and destructor, and the functions it
// registers with atexit make traced calls, as does its shared object
// (lifelib.c) in its own. Each place calls a function of its own, once,
// so that a trace counts each exactly. Prints where it is.
#include <cstdio>
#include <cstdlib>

#define NOINLINE __attribute__((noinline))

extern "C" int lib_in_main(int x);

extern "C" {
NOINLINE int in_global(int x) { std::printf("global %d\n", x); return x; }
NOINLINE int in_global_101(int x) { std::printf("global init_priority(101) %d\n", x); return x; }
NOINLINE int in_global_dtor(int x) { std::printf("global destructor %d\n", x); return x; }
NOINLINE int in_global_dtor_101(int x) { std::printf("global init_priority(101) destructor %d\n", x); return x; }
NOINLINE int in_static(int x) { std::printf("local static %d\n", x); return x; }
NOINLINE int in_static_dtor(int x) { std::printf("local static destructor %d\n", x); return x; }
NOINLINE int in_tls_dtor(int x) { std::printf("thread_local destructor %d\n", x); return x; }
NOINLINE int in_ctor(int x) { std::printf("constructor %d\n", x); return x; }
NOINLINE int in_dtor(int x) { std::printf("destructor %d\n", x); return x; }
NOINLINE void in_atexit_ctor(void) { std::printf("atexit from a constructor\n"); }
NOINLINE void in_atexit_main(void) { std::printf("atexit from main\n"); }
NOINLINE int in_main(int x) { std::printf("main %d\n", x); return x; }
}

struct Global {
	int v;
	NOINLINE explicit Global(int x) : v(x) { in_global(x); }
	NOINLINE ~Global() { in_global_dtor(v); }
};

struct Early {
	int v;
	NOINLINE explicit Early(int x) : v(x) { in_global_101(x); }
	NOINLINE ~Early() { in_global_dtor_101(v); }
};

struct Static {
	int v;
	NOINLINE explicit Static(int x) : v(x) { in_static(x); }
	NOINLINE ~Static() { in_static_dtor(v); }
};

struct Tls {
	int v = 0;
	NOINLINE ~Tls() { in_tls_dtor(v); }
};

Global global(1);
Early early __attribute__((init_priority(101)))(2);
thread_local Tls tls;

NOINLINE static int use_static(int x)
{
	static Static s(x);
	return s.v;
}

__attribute__((constructor)) static void ctor()
{
	in_ctor(3);
	std::atexit(in_atexit_ctor);
}

__attribute__((destructor)) static void dtor()
{
	in_dtor(4);
}

int main()
{
	std::atexit(in_atexit_main);
	tls.v = 5;
	in_main(lib_in_main(use_static(6)) + global.v + early.v);
	return 3;
}
