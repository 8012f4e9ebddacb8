/* Functions of every parameter shape package argspec places
 * (argspec_test.go builds this with -g for x86-64 and arm64 and reads
 * its DWARF): integers of each width and sign, char, bool, enums,
 * pointers and strings, float, double and long double, __int128,
 * complex, structs in registers (integer, floating, mixed, HFA) and in
 * memory or by reference, between other arguments; the registers
 * running out, and what follows them on the stack (integers after a
 * long double, a struct in memory and __int128, floats past the vector
 * registers); structs C would not lay out as their members say (packed,
 * a union, bit-fields) and one too large to record whole; the return
 * values of each kind. */
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

enum color { RED, GREEN, BLUE };
enum sign { MINUS = -1, ZERO, PLUS };
typedef enum { SMALL = 1, LARGE = 2 } size_e;
struct pair { long x, y; };
struct big { long a, b, c; };
struct mixed { long a; double d; };
struct dd { double a, b; };
struct ff { float a, b; };
struct fi { float f; int i; };
struct f3 { float a, b, c; };
struct ld { long double x; };
typedef const char *str;
struct __attribute__((packed)) pk { char c; int i; };
union un { int i; float f; };
struct bits { unsigned a : 3, b : 5; int c; };
struct witharr { int v[3]; char c; };
struct huge { long v[6]; };

#define F __attribute__((noinline, used))
F int ints(int8_t a, int16_t b, int32_t c, int64_t d, uint8_t e, uint16_t f) { return a + b + c + (int)d + e + f; }
F unsigned long uns(unsigned u, unsigned long ul, char c, signed char sc, unsigned char uc, bool b) { return u + ul + c + sc + uc + b; }
F enum color colors(enum color c, enum sign s, size_e z) { return c + s + z; }
F str strs(const char *s, str t, void *p, int *ip, const unsigned char *u) { return p ? s : t + (ip != 0) + (u != 0); }
F double floats(float f, double d, long double ld, float g) { return f + d + (double)ld + g; }
F long double ldret(long double x) { return x; }
F float fret(float x, int after) { return x + after; }
F bool bret(int x) { return x > 0; }
F char cret(int x) { return (char)x; }
F int int128_after(__int128 w, int after) { return (int)w + after; }
F int cplx(double complex z, float complex w, int after) { return (int)creal(z) + (int)crealf(w) + after; }
F long sum(struct pair p, unsigned u) { return p.x + p.y + u; }
F void stop(struct big b, int after) { (void)b, (void)after; }
F unsigned long mix(unsigned long v, struct mixed m, int after) { return v + (unsigned long)m.a + (unsigned long)after; }
F double dd(struct dd a, struct ff b, struct fi c, int after) { return a.a + b.a + c.f + after; }
F double hfa(struct f3 a, double after) { return a.a + after; }
F int ldstruct(struct ld a, int after) { return (int)a.x + after; }
F int many(int a, int b, int c, int d, int e, int f, int g, int h, int i, double x) { return a + b + c + d + e + f + g + h + i + (int)x; }
F int mem_first(struct pair p1, struct pair p2, struct pair p3, int after) { return (int)(p1.x + p2.x + p3.x) + after; }
F struct big bigret(int a) { struct big b = { a, a, a }; return b; }
F struct pair pairret(int a) { struct pair p = { a, a }; return p; }
F double stack_mix(int a, int b, int c, int d, int e, int f, int g, long double x, int h, struct big s, int i, double d1, float f2) { return a + b + c + d + e + f + g + (double)x + h + s.a + i + d1 + f2; }
F float fp_spill(double d1, double d2, double d3, double d4, double d5, double d6, double d7, double d8, double d9, float f10, int n) { return (float)(d1 + d2 + d3 + d4 + d5 + d6 + d7 + d8 + d9 + f10 + n); }
F long i128_late(long a, long b, long c, long d, long e, __int128 w, long f) { return a + b + c + d + e + (long)w + f; }
F int odd_shapes(struct pk p, union un u, struct bits b, struct witharr w, int after) { return p.i + u.i + b.c + w.v[0] + after; }
F long huge_arg(struct huge h, int after) { return h.v[0] + after; }
F struct f3 f3ret(float x) { struct f3 r = { x, x, x }; return r; }
F struct mixed mixret(long x) { struct mixed r = { x, 0.5 }; return r; }
F void nothing(void) {}
F int varargs(int n, ...) { return n; }
static int hidden_helper(int x) { return x; }
int main(void) { return hidden_helper(0); }
