static inline unsigned long cycles(void)
{
	return 0;
}
