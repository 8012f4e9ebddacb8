/* TestCache's program: a function whose symbol the test finds. */
int cached_fn(void)
{
	return 1;
}

int main(void)
{
	return cached_fn() - 1;
}
