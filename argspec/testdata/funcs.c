/* Functions of every parameter shape argspec knows (argspec_test.go
 * builds this with -g and reads its DWARF). */
struct pair {
	long x, y;
};
struct big {
	long a, b, c;
};
struct mixed {
	long a;
	double d;
};
typedef const char *str;

int parse(int n, const char *s) { return n + s[0]; }
double ratio(double a, long k, float b) { return a * k + b; }
long sum(struct pair p, unsigned u) { return p.x + p.y + u; }
str name_of(char c, void *p) { return p ? "p" : c ? "c" : ""; }
void stop(struct big b, int after) { (void)b, (void)after; }
unsigned long hex(unsigned long v, struct mixed m) { return v + (unsigned long)m.a; }
int main(void) { return 0; }
