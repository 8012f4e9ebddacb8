void arch_helper(void);

/* Both architectures define arch_helper: this file's is its own folder's. */
void arch_other(void)
{
	arch_helper();
}
