/*
 * How many of the process's mappings are both writable and executable
 * (from /proc/self/maps): what the test programs that check the
 * runtime's code writes from inside the process report at exit. The
 * runtime must leave none.
 */
#ifndef WXMAPS_H
#define WXMAPS_H

#include <stdio.h>

static long wx_mappings(void)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	long wx = 0;
	while (maps && fgets(line, sizeof line, maps)) {
		char perms[8];
		if (sscanf(line, "%*s %7s", perms) == 1 && perms[1] == 'w' && perms[2] == 'x')
			wx++;
	}
	if (maps)
		fclose(maps);
	return wx;
}

#endif
