// C++ unwinding through traced frames, every shape the tests know of: a
// throw caught a few frames up, through tail calls, rethrown, caught in
// a middle frame that then returns, a destructor that throws and catches
// while another exception unwinds it, std::exception_ptr carried out of
// a catch and rethrown, a throw converted into another in a handler,
// frames whose stack pointer moves (stack arguments, alloca, a realigned
// frame), exceptions in a second thread, one carried back to the first,
// and the forced unwinds of pthread_exit and pthread_cancel. Prints what
// it computed.
//
// Every function of the program is in namespace u (FTRACE_FILTER='u::*'
// chooses them all). Each local whose destructor runs while an exception
// unwinds is of a class declared in the function that owns it, so its
// destructor's name says which frame it belongs to: u::pass(int)::L::~L()
// is a local of u::pass(int). Functions named *_thrown are left by an
// exception every time they are called; every other one returns.
#include <alloca.h>
#include <cstdint>
#include <cstdio>
#include <cxxabi.h>
#include <exception>
#include <pthread.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

// A local of the function it is declared in, whose destructor makes a
// traced call.
#define LOCAL(v)                                                                  \
	struct L {                                                                \
		int id;                                                           \
		NOINLINE ~L() { std::printf("  ~L %d -> %d\n", id, u::note(id)); } \
	} local_{ v }

namespace u {

NOINLINE int note(int x)
{
	return x * 3 + 1;
}

NOINLINE int after(int x)
{
	return note(x) + 1;
}

// Recursion n deep, a local in each frame, then the throw.
NOINLINE int thrower_thrown(int n)
{
	LOCAL(n);
	if (n == 0)
		throw std::runtime_error("bottom");
	return thrower_thrown(n - 1) + 1;
}

NOINLINE int pass_thrown(int n)
{
	LOCAL(100 + n);
	return thrower_thrown(n) * 2;
}

NOINLINE int catcher(int n)
{
	LOCAL(200 + n);
	try {
		return pass_thrown(n);
	} catch (const std::exception &e) {
		std::printf("catcher caught %s\n", e.what());
		return -1;
	}
}

// At -O2 both compilers make these tail calls: the callee's graphed
// entry shares its caller's return slot.
NOINLINE int tail_b_thrown(int n)
{
	return thrower_thrown(n - 1);
}

NOINLINE int tail_a_thrown(int n)
{
	return tail_b_thrown(n + 1);
}

NOINLINE int tail_catcher(int n)
{
	try {
		return tail_a_thrown(n);
	} catch (const std::exception &e) {
		std::printf("tail_catcher caught %s\n", e.what());
		return -2;
	}
}

NOINLINE int rethrower_thrown(int n)
{
	LOCAL(300 + n);
	try {
		return pass_thrown(n);
	} catch (const std::runtime_error &e) {
		std::printf("rethrowing %s\n", e.what());
		throw;
	}
}

NOINLINE int rethrow_catcher(int n)
{
	try {
		return rethrower_thrown(n);
	} catch (const std::exception &e) {
		std::printf("rethrow_catcher caught %s\n", e.what());
		return -3;
	}
}

// Catches in the middle of the path and returns through the frames above.
NOINLINE int mid_catcher(int n)
{
	LOCAL(400 + n);
	try {
		pass_thrown(n);
	} catch (const std::exception &e) {
		std::printf("mid_catcher caught %s\n", e.what());
	}
	return note(n) + 7;
}

NOINLINE int above_mid(int n)
{
	LOCAL(410 + n);
	return mid_catcher(n) + 1;
}

NOINLINE void inner_thrown(int n)
{
	LOCAL(500 + n);
	throw n;
}

// A destructor that throws and catches while another exception unwinds
// its frame.
NOINLINE int careful_thrown(int n)
{
	struct Careful {
		int id;
		NOINLINE ~Careful()
		{
			try {
				u::inner_thrown(id);
			} catch (int v) {
				std::printf("  ~Careful caught %d\n", v);
			}
		}
	} careful{ 510 + n };
	return pass_thrown(n);
}

NOINLINE int careful_catcher(int n)
{
	try {
		return careful_thrown(n);
	} catch (const std::exception &e) {
		std::printf("careful_catcher caught %s\n", e.what());
		return -5;
	}
}

NOINLINE std::exception_ptr capture(int n)
{
	LOCAL(600 + n);
	try {
		pass_thrown(n);
	} catch (...) {
		return std::current_exception();
	}
	return nullptr;
}

NOINLINE void rethrow_ptr_thrown(std::exception_ptr p)
{
	LOCAL(610);
	std::rethrow_exception(p);
}

NOINLINE int ptr_catcher(int n)
{
	std::exception_ptr p = capture(n);
	try {
		rethrow_ptr_thrown(p);
	} catch (const std::exception &e) {
		std::printf("ptr_catcher caught %s\n", e.what());
		return -6;
	}
	return 0;
}

// A handler that throws another exception.
NOINLINE int convert_thrown(int n)
{
	LOCAL(700 + n);
	try {
		return pass_thrown(n);
	} catch (const std::runtime_error &) {
		throw std::logic_error("converted");
	}
}

NOINLINE int convert_catcher(int n)
{
	try {
		return convert_thrown(n);
	} catch (const std::logic_error &e) {
		std::printf("convert_catcher caught %s\n", e.what());
		return -7;
	}
}

// Eight arguments: the last two on the stack, so the caller's stack
// pointer at the call is not the one it has elsewhere.
NOINLINE int args_thrown(int a, int b, int c, int d, int e, int f, int g, int h)
{
	LOCAL(a + b + c + d + e + f + g + h);
	return pass_thrown(h % 3) + a;
}

NOINLINE int args_catcher(int n)
{
	try {
		return args_thrown(n, 1, 2, 3, 4, 5, 6, 7) + args_thrown(n, 2, 3, 4, 5, 6, 7, 8);
	} catch (const std::exception &e) {
		std::printf("args_catcher caught %s\n", e.what());
		return -8;
	}
}

// A frame that grows (alloca) before the call the exception comes
// through, and one whose stack is realigned.
NOINLINE int alloca_catcher(int n)
{
	volatile char *buf = static_cast<volatile char *>(alloca(64 + 32 * n));
	buf[0] = static_cast<char>(n);
	try {
		volatile char *more = static_cast<volatile char *>(alloca(128));
		more[0] = buf[0];
		return pass_thrown(more[0]);
	} catch (const std::exception &e) {
		std::printf("alloca_catcher caught %s %d\n", e.what(), buf[0]);
		return -9;
	}
}

NOINLINE int aligned_catcher(int n)
{
	alignas(64) volatile char buf[64];
	buf[0] = static_cast<char>(n);
	try {
		return pass_thrown(buf[0]);
	} catch (const std::exception &e) {
		std::printf("aligned_catcher caught %s %d\n", e.what(), buf[0]);
		return -10;
	}
}

// A second thread: catches one exception itself, carries another out.
NOINLINE void thread_main(int n, std::exception_ptr *out)
{
	LOCAL(800 + n);
	std::printf("thread: catcher %d\n", catcher(n));
	try {
		pass_thrown(n + 1);
	} catch (...) {
		*out = std::current_exception();
	}
}

NOINLINE int thread_catcher(int n)
{
	std::exception_ptr p;
	std::thread t(thread_main, n, &p);
	t.join();
	try {
		rethrow_ptr_thrown(p);
	} catch (const std::exception &e) {
		std::printf("thread_catcher caught %s\n", e.what());
		return -11;
	}
	return 0;
}

// Forced unwinds, which the C library starts through a handle of its
// own on the unwinder: pthread_exit deep in a thread, and pthread_cancel
// of a thread blocked in read, which catches the unwind and rethrows it.
NOINLINE void exit_deep_thrown(int n)
{
	LOCAL(900 + n);
	if (n == 0)
		pthread_exit(nullptr);
	exit_deep_thrown(n - 1);
}

NOINLINE void *exiter_thrown(void *arg)
{
	LOCAL(910);
	exit_deep_thrown(static_cast<int>(reinterpret_cast<intptr_t>(arg)));
	return nullptr;
}

NOINLINE void cancel_wait_thrown(int fd)
{
	LOCAL(920);
	char c;
	if (read(fd, &c, 1) >= 0)
		std::printf("read returned\n");
}

NOINLINE void *cancelled_thrown(void *arg)
{
	LOCAL(930);
	try {
		cancel_wait_thrown(static_cast<int>(reinterpret_cast<intptr_t>(arg)));
	} catch (abi::__forced_unwind &) {
		std::printf("  cancelled\n");
		throw;
	}
	return nullptr;
}

NOINLINE int forced_catcher(int n)
{
	pthread_t t;
	void *res;
	pthread_create(&t, nullptr, exiter_thrown, reinterpret_cast<void *>(static_cast<intptr_t>(n)));
	pthread_join(t, &res);
	std::printf("forced_catcher: exited %d\n", res == nullptr);
	int fds[2];
	if (pipe(fds) != 0)
		return 1;
	pthread_create(&t, nullptr, cancelled_thrown, reinterpret_cast<void *>(static_cast<intptr_t>(fds[0])));
	pthread_cancel(t);
	pthread_join(t, &res);
	std::printf("forced_catcher: cancelled %d\n", res == PTHREAD_CANCELED);
	close(fds[0]);
	close(fds[1]);
	return -12;
}

} // namespace u

int main()
{
	int (*const cases[])(int) = {
		u::catcher,        u::tail_catcher,   u::rethrow_catcher, u::above_mid,
		u::careful_catcher, u::ptr_catcher,   u::convert_catcher, u::args_catcher,
		u::alloca_catcher, u::aligned_catcher, u::thread_catcher, u::forced_catcher,
	};
	int sum = 0;
	for (auto c : cases) {
		int r = c(2);
		std::printf("= %d, after %d\n", r, u::after(r));
		sum += r;
	}
	return sum & 0x7f;
}
