/* The example calculator's parser interface. */
#ifndef CALC_H
#define CALC_H

struct parser {
	const char *s;   /* next character to read */
	const char *err; /* first error, or 0 */
};

long parse_expr(struct parser *p);
long parse_term(struct parser *p);
long parse_factor(struct parser *p);

#endif
