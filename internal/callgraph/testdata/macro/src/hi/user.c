#include "../lo/log.h"

void user(void)
{
	LOG("started");
	log_flush();
}
