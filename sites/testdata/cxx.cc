// cxx.cc: C++ inline and template functions, which compilers emit in
// COMDAT groups (one section group per function) so the linker keeps one
// copy of each. A site table for them must join their groups.
//
// No #include: builds for every target without a C++ sysroot.

template <typename T>
T twice(T x)
{
	return x + x;
}

struct Counter {
	int n = 0;
	void bump() { n++; } // inline member function
};

inline int shared_inline(int x)
{
	return x * 7;
}

int use_all(int x)
{
	Counter c;
	c.bump();
	return twice(x) + static_cast<int>(twice(1.5)) + shared_inline(x) + c.n;
}

// Explicit instantiation: emitted even at -O2, in its own COMDAT group.
template long twice<long>(long);
