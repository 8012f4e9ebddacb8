/* A recursive-descent parser for integer expressions: the bundled example
 * program ftpatch traces in `make demo`.
 *
 *   expr   := term (('+' | '-') term)*
 *   term   := factor (('*' | '/') factor)*
 *   factor := number | '(' expr ')' | '-' factor
 */
#include "calc.h"

static void skip_space(struct parser *p)
{
	while (*p->s == ' ')
		p->s++;
}

static long parse_number(struct parser *p)
{
	long v = 0;
	while (*p->s >= '0' && *p->s <= '9')
		v = v * 10 + (*p->s++ - '0');
	return v;
}

long parse_factor(struct parser *p)
{
	long v;
	skip_space(p);
	if (*p->s == '(') {
		p->s++;
		v = parse_expr(p);
		skip_space(p);
		if (*p->s == ')')
			p->s++;
		else
			p->err = "missing )";
		return v;
	}
	if (*p->s == '-') {
		p->s++;
		return -parse_factor(p);
	}
	if (*p->s < '0' || *p->s > '9') {
		p->err = "number expected";
		return 0;
	}
	return parse_number(p);
}

long parse_term(struct parser *p)
{
	long v = parse_factor(p);
	for (;;) {
		skip_space(p);
		char op = *p->s;
		if (op != '*' && op != '/')
			return v;
		p->s++;
		long r = parse_factor(p);
		if (op == '*')
			v *= r;
		else if (r == 0)
			p->err = "division by zero";
		else
			v /= r;
	}
}

long parse_expr(struct parser *p)
{
	long v = parse_term(p);
	for (;;) {
		skip_space(p);
		char op = *p->s;
		if (op != '+' && op != '-')
			return v;
		p->s++;
		long r = parse_term(p);
		v = op == '+' ? v + r : v - r;
	}
}
