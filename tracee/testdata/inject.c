/* A shared object tracee's test loads into a running process. */
int injected_answer(void)
{
	return 4242;
}
