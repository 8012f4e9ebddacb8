#include <stdio.h>

void greet_world(void) { puts("hello"); }
