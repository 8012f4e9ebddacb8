/* The buffer asks the tracer to flush: a call running up, without a
 * circle (the tracer calls nothing of core's). Names in comments and
 * strings are no calls: tracer_other(). */
void tracer_flush(void);
int puts(const char *);

struct ops {
	void (*tracer_other)(void); /* a member, not the function */
};

void buf_full(struct ops *o)
{
	puts("tracer_other()");
	o->tracer_other();
	tracer_flush();
}
