void hook(void);
void arch_helper(void);

void tracer_enter(void)
{
	arch_helper();
}

/* The hook's address: a reference to an assembly label. */
unsigned long hook_addr(void)
{
	return (unsigned long)hook;
}
