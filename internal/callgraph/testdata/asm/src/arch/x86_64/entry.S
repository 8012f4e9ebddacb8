#include "asm.h"

/* hook: the sites' call, into the tracer (up). */
	ENTRY	hook
	call	tracer_enter		/* tracer_enter(): C, a layer up */
	call	.Llocal
	jmp	*%r11
.Llocal:
	ret

	ENTRY	arch_helper
	ret
