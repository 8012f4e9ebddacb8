#include "../arch/cpu.h"

void core_on_event(void (*f)(int));
void core_event(int x);
