void greet_world(void);

int main(void)
{
	greet_world();
	return 0;
}
