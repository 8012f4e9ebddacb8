int lo_a(int);

int hi_b(int x)
{
	return lo_a(x);
}
