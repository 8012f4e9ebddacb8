/*
 * What the layers above tell the ISA's site code (site.h): the module
 * whose sites are being written, the tracer they are written for, the
 * running pass's counts, the tracers' entry points; and the direct
 * trampolines ops were given (poke.h), by which a site that calls one is
 * known for enabled. Data only, and a table's lookups.
 */
#include <errno.h>

#include "poke.h"
#include "site.h"

const uintptr_t *ftrt_targets;
const uintptr_t *ftrt_prologues, *ftrt_prologues_end;

int ftrt_site_prologue(uintptr_t ip)
{
	const uintptr_t *lo = ftrt_prologues, *hi = ftrt_prologues_end;
	if (!lo)
		return 0;
	while (lo < hi) {
		const uintptr_t *mid = lo + (hi - lo) / 2;
		if (*mid < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ftrt_prologues_end && *lo == ip;
}
uintptr_t ftrt_walk_seg_lo, ftrt_walk_seg_hi;
struct ftrt_stats *ftrt_pass_stats;
int ftrt_mode;
int ftrt_trap_armed;
struct ftrt_arch_entries ftrt_arch_entries;

/* Every direct trampoline registered (or modified to). */
static uintptr_t directs[512];
static int ndirects;

int ftrt_arch_direct_known(uintptr_t a)
{
	for (int i = 0; a && i < ndirects; i++)
		if (directs[i] == a)
			return 1;
	return 0;
}

int ftrt_arch_direct_note(uintptr_t a)
{
	if (ftrt_arch_direct_known(a))
		return 0;
	if (ndirects == (int)(sizeof directs / sizeof *directs))
		return -ENOSPC;
	directs[ndirects++] = a;
	return 0;
}
