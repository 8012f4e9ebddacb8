/*
 * linked.c: a program with no C library, linked as a shared object and as
 * a static executable to check that recordmcount refuses files that are
 * not relocatable objects. It is never run. The exact build commands are
 * in the Makefile beside this file.
 */
int value = 7;

int get(void) { return value; }

void _start(void) { get(); }
