/* The program: calls the library, and a function of its own whose
 * arguments --auto-args reads from the program's DWARF. */
void greet_world(void);

__attribute__((noinline)) int add(int a, int b)
{
	return a + b;
}

int main(void)
{
	greet_world();
	return add(1, 2) - 3;
}
