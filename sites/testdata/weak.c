/*
 * weak.c: a code section holding only weak functions. Compiled with
 * -ffunction-sections -fno-asynchronous-unwind-tables, nothing refers to
 * the sections themselves (relocations name the weak symbols, and there is
 * no .eh_frame), so the assembler emits no section symbols for them: a
 * table of sites must create one to point into each.
 *
 * Taking weak_first's address makes clang list it in .llvm_addrsig, a
 * section of symbol indices that creating symbols must renumber.
 */

int weak_counter;

__attribute__((weak)) int weak_first(int x)
{
	return x + weak_counter;
}

__attribute__((weak)) int weak_second(int x)
{
	return weak_first(x) * 2;
}

int (*weak_ptr)(int) = weak_first;
