#include "log.h"

void log_write(const char *msg, int line)
{
	(void)msg;
	(void)line;
}
