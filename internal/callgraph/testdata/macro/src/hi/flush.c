void hi_flush(void)
{
}
