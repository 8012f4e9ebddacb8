// C++ exceptions through traced frames: thrown deep and caught higher up,
// rethrown, caught in nested handlers, with destructors that call traced
// functions while the stack unwinds. Prints what it computed.
#include <cstdio>
#include <stdexcept>
#include <string>

#define NOINLINE __attribute__((noinline))

NOINLINE int note(int x) { return x * 2; }

struct Guard {
	int id;
	NOINLINE explicit Guard(int i) : id(i) {}
	NOINLINE ~Guard() { std::printf("unwind guard %d -> %d\n", id, note(id)); }
};

NOINLINE int thrower(int n)
{
	Guard g(n);
	if (n == 0)
		throw std::runtime_error("bottom");
	return thrower(n - 1) + 1;
}

NOINLINE int middle(int n) { return thrower(n) * 2; }

NOINLINE int rethrower(int n)
{
	try {
		return middle(n);
	} catch (const std::runtime_error &e) {
		std::printf("rethrowing %s\n", e.what());
		throw;
	}
}

NOINLINE std::string nested(int n)
{
	try {
		try {
			rethrower(n);
		} catch (const std::logic_error &) {
			return "wrong handler";
		}
	} catch (const std::exception &e) {
		return std::string("nested caught ") + e.what();
	}
	return "no exception";
}

NOINLINE int after(int x) { return note(x) + 1; }

int main()
{
	try {
		middle(3);
	} catch (const std::exception &e) {
		std::printf("caught %s\n", e.what());
	}
	std::printf("%s\n", nested(2).c_str());
	std::printf("after %d\n", after(20));
	for (int i = 0; i < 3; i++) {
		try {
			if (i % 2)
				throw i;
			std::printf("no throw %d\n", note(i));
		} catch (int v) {
			std::printf("caught int %d\n", v);
		}
	}
	return 0;
}
