/*
 * C++ exceptions thrown from library functions (tests/libcall_test.go):
 * vector::at out of range calls libstdc++'s __throw_out_of_range_fmt,
 * which throws through pick, caught in mid, two frames up; three times.
 * Then the same throw through guard, whose vector is freed on the way
 * out (a cleanup, which goes on with _Unwind_Resume), caught in again and
 * thrown on (__cxa_rethrow), caught in outer. Then a throw of the
 * program's own, whose message is built by library calls. Prints the sum
 * of what the catches gave. pick, mid, guard, again and outer have C
 * names, as reports name them in one word.
 */
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" __attribute__((noinline)) int pick(std::vector<int> &v, size_t i)
{
	return v.at(i);
}

extern "C" __attribute__((noinline)) int mid(std::vector<int> &v)
{
	try {
		return pick(v, 10);
	} catch (const std::out_of_range &) {
		return -1;
	}
}

extern "C" __attribute__((noinline)) int guard(std::vector<int> &v)
{
	std::vector<int> copy(v); /* freed as the exception leaves */
	return pick(copy, 10);
}

extern "C" __attribute__((noinline)) int again(std::vector<int> &v)
{
	try {
		return guard(v);
	} catch (const std::out_of_range &) {
		throw;
	}
}

extern "C" __attribute__((noinline)) int outer(std::vector<int> &v)
{
	try {
		return again(v);
	} catch (const std::out_of_range &) {
		return -2;
	}
}

int main(int argc, char **argv)
{
	std::vector<int> v{ 1, 2, 3 };
	int r = 0;
	for (int i = 0; i < 3; i++)
		r += mid(v);
	r += outer(v);
	std::string s = argc > 5 ? argv[1] : "abc";
	try {
		throw std::runtime_error("x" + s);
	} catch (std::exception &e) {
		r += (int)std::string(e.what()).size();
	}
	std::printf("r=%d\n", r);
	return 0;
}
