/*
 * The sites the runtime made at load from functions' prologues (record
 * -P: patch/prologue.c), for the trace's reader: "<pid>PROLOGUE_SUFFIX"
 * in the trace directory (abi.h): a header, then for each such site of
 * every module the process loaded, its run-time address (in its
 * trampoline, which no symbol covers: what the records hold) and its
 * function's, by which the reader names it. Written with the metadata,
 * whole each time (it only grows), into the trace's directory or a
 * snapshot's.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "arch/fds.h"
#include "tracer.h"

void ftrt_prologue_out(int dir, int pid)
{
	size_t n = 0;
	for (int i = 0; ftrt_module_at(i); i++)
		if (ftrt_module_at(i)->prologue_funcs)
			n += ftrt_module_at(i)->nprologues;
	if (n == 0)
		return;
	char name[32];
	char *p = ftrt_utoa(name, (uint64_t)pid);
	for (size_t i = 0; i < sizeof PROLOGUE_SUFFIX; i++)
		p[i] = PROLOGUE_SUFFIX[i];
	long fd = ftrt_file_create(dir, name);
	if (fd == -EEXIST) { /* written before (an earlier snapshot or exec's metadata): again, whole */
		sys(SYS_unlinkat, dir, (long)name, 0, 0, 0, 0);
		fd = ftrt_file_create(dir, name);
	}
	struct ftrt_fd f;
	if (ftrt_fd_keep(&f, fd) != 0)
		return;
	unsigned char hdr[PROLOGUE_HEADER] = PROLOGUE_MAGIC;
	uint32_t ids[2] = { (uint32_t)pid, 0 };
	for (int i = 0; i < 8; i++)
		hdr[8 + i] = ((const unsigned char *)ids)[i];
	uint64_t off = 0;
	int ok = ftrt_put(f.fd, hdr, sizeof hdr, off) == sizeof hdr;
	off += sizeof hdr;
	uint64_t buf[64];
	size_t k = 0;
	for (int i = 0; ok && ftrt_module_at(i); i++) {
		const struct ftrt_mod *md = ftrt_module_at(i);
		if (!md->prologue_funcs)
			continue;
		for (size_t j = 0; j < md->nprologues && ok; j++) {
			buf[k++] = md->prologues[j];
			buf[k++] = md->prologue_funcs[j];
			if (k == 64) {
				ok = ftrt_put(f.fd, buf, sizeof buf, off) == sizeof buf;
				off += sizeof buf, k = 0;
			}
		}
	}
	if (ok && k)
		ok = ftrt_put(f.fd, buf, k * 8, off) == k * 8;
	if (!ok)
		sys(SYS_unlinkat, dir, (long)name, 0, 0, 0, 0); /* cut short: no reader must find a part */
	ftrt_fd_close(&f);
}
