/*
 * Linked after oddsites.S, this makes the site table one the load-time
 * pass must copy, sort and de-duplicate: a zero word (what a site in a
 * discarded section leaves) and odd_call listed again, out of order.
 */
	.pushsection __mcount_loc, "a", @progbits
	.quad	0
	.quad	odd_call
	.popsection

	.section .note.GNU-stack, "", @progbits
