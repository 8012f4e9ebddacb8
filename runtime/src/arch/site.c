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

/*
 * The walk asks about every site in ascending order, twice each
 * (sites.c's resolve, then enable_as), and the list is sorted: where the
 * last answer was found (or would have been), or just after it, is
 * where the next one is, almost always. A binary search of 10,000
 * sites mispredicts half its fourteen branches, a quarter of a -P
 * pass's time before this cursor. The cursor is a hint shared by every
 * thread that asks (the pass, ftpatch ctl's server): read and written
 * whole (relaxed atomics), checked against the list before use, so a
 * stale one, or one from another module's list, costs only the search.
 */
static const uintptr_t *cursor;

int ftrt_site_prologue(uintptr_t ip)
{
	const uintptr_t *lo = ftrt_prologues, *hi = ftrt_prologues_end;
	if (!lo)
		return 0;
	/* At the cursor or a few steps on: the first entry not below ip. */
	const uintptr_t *c = __atomic_load_n(&cursor, __ATOMIC_RELAXED);
	int near = 0;
	if (c >= lo && c < hi && *c <= ip) {
		for (int k = 0; k < 4 && c < hi && *c < ip; k++)
			c++;
		if (c < hi && *c >= ip)
			lo = c, near = 1;
	}
	if (!near) {
		while (lo < hi) {
			const uintptr_t *mid = lo + (hi - lo) / 2;
			if (*mid < ip)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	int found = lo < ftrt_prologues_end && *lo == ip;
	/* Left on ip's entry, or on the last one below it. */
	if (found || lo > ftrt_prologues)
		__atomic_store_n(&cursor, found ? lo : lo - 1, __ATOMIC_RELAXED);
	return found;
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
