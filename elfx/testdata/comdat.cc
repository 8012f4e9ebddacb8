// comdat.cc: C++ inline functions and template instances, which g++ puts
// in COMDAT section groups (SHT_GROUP), one group per function.
//
// Rebuilt with the exact flags by the Makefile beside it.
template <typename T> __attribute__((noinline)) T sq(T x) { return x * x; }

inline __attribute__((noinline)) int tri(int x) { return x * (x + 1) / 2; }

int use(int a, long b) { return sq(a) + (int)sq(b) + tri(a); }
