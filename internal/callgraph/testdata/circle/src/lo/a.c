/* lo_a and hi_b call each other: a circle of two files, and of two layers. */
int hi_b(int);

int lo_a(int x)
{
	if (x)
		return hi_b(x - 1);
	return 0;
}
