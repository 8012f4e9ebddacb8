void tracer_flush(void)
{
}

void tracer_other(void)
{
}
