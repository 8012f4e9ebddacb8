package sites_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"ftpatch/elfx"
	"ftpatch/internal/fixture"
	"ftpatch/internal/fuzzing"
	"ftpatch/internal/sitetest"
	"ftpatch/sites"
)

// A decodeCase is one hand-written function: its assembly and the site
// FindDecoded must find in it ("kind state len +off", or "-" for none),
// per way of linking it.
type decodeCase struct {
	name string
	asm  string
	// defined: linked with the hooks and trampolines defined beside it;
	// imported: linked against the C library, which exports the hooks
	// (no trampolines). "" leaves the case out of that build (it calls
	// a symbol the build lacks). A build without any hook takes every
	// case that names no hook and finds no site in any.
	defined, imported string
	hooks             bool // names a hook or trampoline
	// target is what a call site's TARGET names, when the assembly does
	// not name it (a call through a slot of our own); else the last
	// hook or trampoline the assembly names.
	target string
}

// calls are the hooks and trampolines the cases call, which a call
// site's target must name.
var calls = regexp.MustCompile(`\b(__fentry__|_?mcount|ftrace_(mcount_|chain_)?caller[56]?|ftrace_stub)\b`)

// wantTarget is the function case c's call site must lead to.
func (c decodeCase) wantTarget() string {
	if c.target != "" {
		return c.target
	}
	m := calls.FindAllString(c.asm, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1]
}

// x86Cases: what counts as a site on x86-64, and what must not.
var x86Cases = []decodeCase{
	{name: "fentry_e8", asm: "call __fentry__\n ret", defined: "fentry call 5 +0", imported: "fentry call 5 +0", hooks: true},
	{name: "fentry_endbr", asm: "endbr64\n call __fentry__\n ret", defined: "fentry call 5 +4", imported: "fentry call 5 +4", hooks: true},
	// addr32 call: what the linker relaxes the PIE form to.
	{name: "fentry_addr32", asm: ".byte 0x67\n call __fentry__\n ret", defined: "fentry call 6 +0", hooks: true},
	// call *slot(%rip) with a slot of our own holding the hook: filled
	// by the static link, or by a RELATIVE relocation in a PIE.
	{name: "fentry_slot", asm: ".byte 0xff, 0x15\n .long fentry_slot_ptr - . - 4\n ret", defined: "fentry call 6 +0", hooks: true, target: "__fentry__"},
	// call *__fentry__@GOTPCREL(%rip): the linker keeps it only for an
	// imported hook (GLOB_DAT); a defined one it relaxes to addr32 call.
	{name: "fentry_got", asm: "call *__fentry__@GOTPCREL(%rip)\n ret", defined: "fentry call 6 +0", imported: "fentry call 6 +0", hooks: true},
	{name: "slot_other", asm: ".byte 0xff, 0x15\n .long other_slot_ptr - . - 4\n ret", defined: "-", hooks: true},
	{name: "jmp_fentry", asm: "jmp __fentry__", defined: "-", imported: "-", hooks: true},
	{name: "call_other_first", asm: "call other\n call __fentry__\n ret", defined: "-", imported: "-", hooks: true},
	{name: "fentry_after_push", asm: "push %rbp\n call __fentry__\n pop %rbp\n ret", defined: "-", imported: "-", hooks: true},
	{name: "mcount_at_entry", asm: "call mcount\n ret", defined: "-", imported: "-", hooks: true},
	// gcc -pg: the call after the frame setup (and pushes, sub).
	{name: "mcount_gcc", asm: "push %rbp\n mov %rsp,%rbp\n push %rbx\n sub $24,%rsp\n call mcount\n leave\n ret", defined: "mcount call 5 +9", imported: "mcount call 5 +9", hooks: true},
	{name: "mcount_gcc_endbr", asm: "endbr64\n push %rbp\n mov %rsp,%rbp\n call mcount\n pop %rbp\n ret", defined: "mcount call 5 +8", imported: "mcount call 5 +8", hooks: true},
	{name: "mcount_got", asm: "push %rbp\n mov %rsp,%rbp\n call *mcount@GOTPCREL(%rip)\n pop %rbp\n ret", defined: "mcount call 6 +4", imported: "mcount call 6 +4", hooks: true},
	// clang -O0 on a varargs function: the register save area, skipped
	// by a forward je, before the call.
	{name: "mcount_clang_varargs", asm: "push %rbp\n mov %rsp,%rbp\n sub $0xd0,%rsp\n test %al,%al\n je 1f\n movaps %xmm0,-0x80(%rbp)\n movaps %xmm1,-0x70(%rbp)\n1:\n mov %rsi,-0xa8(%rbp)\n mov %edi,-0x4(%rbp)\n call mcount\n leave\n ret",
		defined: "mcount call 5 +33", imported: "mcount call 5 +33", hooks: true},
	// clang -O2 computes before the call; a call proves the site.
	{name: "mcount_clang_compute", asm: "push %rbp\n mov %rsp,%rbp\n push %rbx\n push %rax\n movabs $0x123456789,%rbx\n xor %eax,%eax\n call mcount\n pop %rax\n pop %rbx\n pop %rbp\n ret",
		defined: "mcount call 5 +18", imported: "mcount call 5 +18", hooks: true},
	{name: "mcount_after_other", asm: "push %rbp\n mov %rsp,%rbp\n call other\n call mcount\n pop %rbp\n ret", defined: "-", imported: "-", hooks: true},
	{name: "mcount_after_jmp", asm: "push %rbp\n mov %rsp,%rbp\n jmp 1f\n1:\n call mcount\n pop %rbp\n ret", defined: "-", imported: "-", hooks: true},
	{name: "mcount_after_loop", asm: "push %rbp\n mov %rsp,%rbp\n1:\n dec %edi\n jne 1b\n call mcount\n pop %rbp\n ret", defined: "-", imported: "-", hooks: true},
	{name: "mcount_no_frame", asm: "push %rbx\n call mcount\n pop %rbx\n ret", defined: "-", imported: "-", hooks: true},
	// NOPs: ours, in a file defining the hook, where the call would be.
	{name: "nop5_entry", asm: ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n ret", defined: "fentry nop 5 +0", imported: "-"},
	{name: "nop6_entry", asm: ".byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n ret", defined: "fentry nop 6 +0", imported: "-"},
	{name: "nop5_endbr", asm: "endbr64\n .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n ret", defined: "fentry nop 5 +4", imported: "-"},
	{name: "nop5_k8", asm: ".byte 0x66, 0x66, 0x66, 0x66, 0x90\n ret", defined: "fentry nop 5 +0", imported: "-"},
	{name: "nop6_jmp", asm: ".byte 0xeb, 0x04, 0x90, 0x90, 0x90, 0x90\n ret", defined: "fentry nop 6 +0", imported: "-"},
	// Not ours: clang's patchable padding, gcc's five one-byte NOPs, a
	// 4-byte NOP.
	{name: "nop5_clang", asm: ".byte 0x0f, 0x1f, 0x44, 0x00, 0x08\n ret", defined: "-", imported: "-"},
	{name: "nops_gcc", asm: ".byte 0x90, 0x90, 0x90, 0x90, 0x90\n ret", defined: "-", imported: "-"},
	{name: "nop4_entry", asm: ".byte 0x0f, 0x1f, 0x40, 0x00\n ret", defined: "-", imported: "-"},
	{name: "mcount_nop", asm: "push %rbp\n mov %rsp,%rbp\n sub $16,%rsp\n mov %edi,-4(%rbp)\n .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n leave\n ret", defined: "mcount nop 5 +11", imported: "-"},
	// Stack-passed arguments loaded from the caller's frame (clang -O0).
	{name: "mcount_nop_stackarg", asm: "push %rbp\n mov %rsp,%rbp\n sub $0x70,%rsp\n mov %r9d,-0x30(%rbp)\n mov 0x10(%rbp),%eax\n .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n leave\n ret", defined: "mcount nop 5 +15", imported: "-"},
	// A loop's alignment NOP after a guard or a computation is not an
	// mcount site, whatever its bytes.
	{name: "nop_loop_guard", asm: "push %rbp\n mov %rsp,%rbp\n test %edi,%edi\n jle 2f\n .byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n1:\n dec %edi\n jne 1b\n2:\n pop %rbp\n ret", defined: "-", imported: "-"},
	{name: "nop_after_xor", asm: "push %rbp\n mov %rsp,%rbp\n xor %eax,%eax\n .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n1:\n dec %edi\n jne 1b\n pop %rbp\n ret", defined: "-", imported: "-"},
	// A NOP ending 8-aligned that a later jump comes back to is a loop's
	// alignment padding; without the jump, it is a site.
	{name: "nop_loop_head", asm: "push %rbp\n mov %rsp,%rbp\n sub $0x18,%rsp\n mov %edi,%ebx\n .byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n1:\n dec %ebx\n jne 1b\n leave\n ret", defined: "-", imported: "-"},
	{name: "nop_aligned_site", asm: "push %rbp\n mov %rsp,%rbp\n sub $0x18,%rsp\n mov %edi,%ebx\n .byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n dec %ebx\n jne 1f\n inc %ebx\n1:\n leave\n ret", defined: "mcount nop 6 +10", imported: "-"},
	{name: "nop_after_load", asm: "push %rbp\n mov %rsp,%rbp\n mov (%rdi),%rax\n .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n pop %rbp\n ret", defined: "-", imported: "-"},
	// Calls the runtime writes: to the trampoline of the site's kind and
	// length, in the site's place.
	{name: "tramp5", asm: "call ftrace_caller5\n ret", defined: "fentry call 5 +0", hooks: true},
	{name: "tramp6", asm: ".byte 0x67\n call ftrace_caller6\n ret", defined: "fentry call 6 +0", hooks: true},
	{name: "tramp_stub", asm: ".byte 0x67\n call ftrace_stub\n ret", defined: "fentry call 6 +0", hooks: true},
	{name: "tramp_mcount5", asm: "push %rbp\n mov %rsp,%rbp\n call ftrace_mcount_caller5\n pop %rbp\n ret", defined: "mcount call 5 +4", hooks: true},
	{name: "tramp_mcount6", asm: "push %rbp\n mov %rsp,%rbp\n .byte 0x67\n call ftrace_mcount_caller6\n pop %rbp\n ret", defined: "mcount call 6 +4", hooks: true},
	{name: "tramp_wrong_len", asm: "call ftrace_caller6\n ret", defined: "-", hooks: true},
	{name: "tramp_wrong_len6", asm: ".byte 0x67\n call ftrace_caller5\n ret", defined: "-", hooks: true},
	{name: "tramp_wrong_place", asm: "call ftrace_mcount_caller5\n ret", defined: "-", hooks: true},
	{name: "tramp_wrong_place2", asm: "push %rbp\n mov %rsp,%rbp\n call ftrace_caller5\n pop %rbp\n ret", defined: "-", hooks: true},
	{name: "plain", asm: "push %rbp\n mov %rsp,%rbp\n call other\n pop %rbp\n ret", defined: "-", imported: "-"},
	// A patchable area (the patchable_function_entry attribute) before
	// the compiler's call: the call is the site. The first lists the area
	// in __patchable_function_entries, as gcc does, which leaves FindLinked
	// decoding all the same.
	{name: "fentry_area_gcc", asm: ".byte 0x90, 0x90, 0x90, 0x90, 0x90\n call __fentry__\n ret\n" +
		" .pushsection __patchable_function_entries, \"aw\", @progbits\n .quad fentry_area_gcc\n .popsection",
		defined: "fentry call 5 +5", imported: "fentry call 5 +5", hooks: true},
	{name: "fentry_area_clang", asm: ".byte 0x0f, 0x1f, 0x44, 0x00, 0x08\n call __fentry__\n ret", defined: "fentry call 5 +5", imported: "fentry call 5 +5", hooks: true},
	{name: "fentry_area_endbr", asm: "endbr64\n .byte 0x90, 0x90, 0x90\n call *__fentry__@GOTPCREL(%rip)\n ret", defined: "fentry call 6 +7", imported: "fentry call 6 +7", hooks: true},
	{name: "nop5_after_area", asm: ".byte 0x90, 0x90, 0x90, 0x90, 0x90\n .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n ret", defined: "fentry nop 5 +5", imported: "-"},
	{name: "mcount_after_area", asm: ".byte 0x90, 0x90, 0x90, 0x90, 0x90\n push %rbp\n mov %rsp,%rbp\n call mcount\n pop %rbp\n ret", defined: "mcount call 5 +9", imported: "mcount call 5 +9", hooks: true},
	{name: "fentry_after_other_nop", asm: ".byte 0x0f, 0x1f, 0xc8\n call __fentry__\n ret", defined: "-", imported: "-", hooks: true},
	// A GNU C nested function: gcc keeps the static chain (r10) across
	// the call (a chain site), with endbr64 after the push (gcc 12) or
	// before it, and a patchable area's NOPs after both.
	{name: "chain", asm: "push %r10\n call __fentry__\n pop %r10\n mov (%r10),%eax\n ret", defined: "chain call 5 +2", imported: "chain call 5 +2", hooks: true},
	{name: "chain_got", asm: "push %r10\n call *__fentry__@GOTPCREL(%rip)\n pop %r10\n ret", defined: "chain call 6 +2", imported: "chain call 6 +2", hooks: true},
	{name: "chain_endbr_after", asm: "push %r10\n endbr64\n call __fentry__\n pop %r10\n ret", defined: "chain call 5 +6", imported: "chain call 5 +6", hooks: true},
	{name: "chain_endbr_before", asm: "endbr64\n push %r10\n call __fentry__\n pop %r10\n ret", defined: "chain call 5 +6", imported: "chain call 5 +6", hooks: true},
	{name: "chain_area", asm: "push %r10\n .byte 0x90, 0x90, 0x90, 0x90, 0x90\n call __fentry__\n pop %r10\n ret", defined: "chain call 5 +7", imported: "chain call 5 +7", hooks: true},
	{name: "chain_nop6", asm: "push %r10\n .byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n pop %r10\n ret", defined: "chain nop 6 +2", imported: "-"},
	{name: "chain_no_pop", asm: "push %r10\n call __fentry__\n pop %r11\n ret", defined: "-", imported: "-", hooks: true},
	{name: "chain_tramp5", asm: "push %r10\n call ftrace_chain_caller5\n pop %r10\n ret", defined: "chain call 5 +2", hooks: true},
	{name: "chain_tramp6", asm: "push %r10\n .byte 0x67\n call ftrace_chain_caller6\n pop %r10\n ret", defined: "chain call 6 +2", hooks: true},
	{name: "chain_tramp_entry", asm: "push %r10\n call ftrace_caller5\n pop %r10\n ret", defined: "-", hooks: true},
	{name: "tramp_chain_at_entry", asm: "call ftrace_chain_caller5\n ret", defined: "-", hooks: true},
}

// x86Defs are the hooks, trampolines and pointer slots of the "defined"
// build.
const x86Defs = `
	.globl __fentry__, mcount, ftrace_caller5, ftrace_caller6, ftrace_mcount_caller5, ftrace_mcount_caller6
	.globl ftrace_chain_caller5, ftrace_chain_caller6, ftrace_stub
	.type __fentry__, @function
__fentry__: ret
	.size __fentry__, .-__fentry__
	.type mcount, @function
mcount: ret
	.size mcount, .-mcount
	.type ftrace_caller5, @function
ftrace_caller5: ret
	.size ftrace_caller5, .-ftrace_caller5
	.type ftrace_caller6, @function
ftrace_caller6: ret
	.size ftrace_caller6, .-ftrace_caller6
	.type ftrace_mcount_caller5, @function
ftrace_mcount_caller5: ret
	.size ftrace_mcount_caller5, .-ftrace_mcount_caller5
	.type ftrace_mcount_caller6, @function
ftrace_mcount_caller6: ret
	.size ftrace_mcount_caller6, .-ftrace_mcount_caller6
	.type ftrace_chain_caller5, @function
ftrace_chain_caller5: ret
	.size ftrace_chain_caller5, .-ftrace_chain_caller5
	.type ftrace_chain_caller6, @function
ftrace_chain_caller6: ret
	.size ftrace_chain_caller6, .-ftrace_chain_caller6
	.type ftrace_stub, @function
ftrace_stub: ret
	.size ftrace_stub, .-ftrace_stub
	.data
	.p2align 3
fentry_slot_ptr: .quad __fentry__
other_slot_ptr: .quad other
	.text
`

// arm64Cases: what counts as a site on arm64, and what must not.
var arm64Cases = []decodeCase{
	// gcc -O2 -pg.
	{name: "gcc", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n xpaclri\n mov x0, x30\n bl _mcount\n ldp x29, x30, [sp], #16\n ret", defined: "mcount call 4 +16", imported: "mcount call 4 +16", hooks: true},
	// gcc -O2 -pg -mbranch-protection=standard.
	{name: "gcc_pac", asm: "paciasp\n stp x29, x30, [sp, #-32]!\n mov x29, sp\n str x19, [sp, #16]\n xpaclri\n mov w19, w0\n mov x0, x30\n bl _mcount\n ldr x19, [sp, #16]\n ldp x29, x30, [sp], #32\n autiasp\n ret", defined: "mcount call 4 +28", imported: "mcount call 4 +28", hooks: true},
	// gcc on a varargs function: the argument registers saved between
	// `mov x0, x30` and the call.
	{name: "gcc_varargs", asm: "stp x29, x30, [sp, #-128]!\n mov x29, sp\n mov x0, x30\n stp x1, x2, [sp, #72]\n str x7, [sp, #120]\n bl _mcount\n ldp x29, x30, [sp], #128\n ret", defined: "mcount call 4 +20", imported: "mcount call 4 +20", hooks: true},
	// gcc -O0: the return address through x1.
	{name: "gcc_O0", asm: "stp x29, x30, [sp, #-32]!\n mov x29, sp\n mov x1, x30\n str w0, [sp, #28]\n mov x30, x1\n xpaclri\n mov x0, x30\n bl _mcount\n ldp x29, x30, [sp], #32\n ret", defined: "mcount call 4 +28", imported: "mcount call 4 +28", hooks: true},
	// clang -pg: no `mov x0, x30`, the frame record at an offset.
	{name: "clang", asm: "sub sp, sp, #48\n stp x29, x30, [sp, #32]\n add x29, sp, #32\n stur w0, [x29, #-4]\n bl _mcount\n ldp x29, x30, [sp, #32]\n add sp, sp, #48\n ret", defined: "mcount call 4 +16", imported: "mcount call 4 +16", hooks: true},
	{name: "tail_call", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n mov x0, x30\n ldp x29, x30, [sp], #16\n b _mcount", defined: "-", imported: "-", hooks: true},
	{name: "b_mcount", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n mov x0, x30\n b _mcount", defined: "-", imported: "-", hooks: true},
	{name: "bl_at_entry", asm: "bl _mcount\n ret", defined: "-", imported: "-", hooks: true},
	{name: "bl_other_first", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n bl other\n mov x0, x30\n bl _mcount\n ldp x29, x30, [sp], #16\n ret", defined: "-", imported: "-", hooks: true},
	{name: "after_branch", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n cbz x0, 1f\n mov x0, x30\n bl _mcount\n1:\n ldp x29, x30, [sp], #16\n ret", defined: "-", imported: "-", hooks: true},
	{name: "nop_gcc", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n xpaclri\n mov x0, x30\n nop\n ldp x29, x30, [sp], #16\n ret", defined: "mcount nop 4 +16", imported: "-"},
	{name: "nop_gcc_pac", asm: "paciasp\n stp x29, x30, [sp, #-32]!\n mov x29, sp\n str x19, [sp, #16]\n xpaclri\n mov w19, w0\n mov x0, x30\n nop\n ldr x19, [sp, #16]\n ldp x29, x30, [sp], #32\n autiasp\n ret", defined: "mcount nop 4 +28", imported: "-"},
	// gcc's shape is the proof, even with a loop right after the site.
	{name: "nop_gcc_loop", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n mov x0, x30\n nop\n1:\n subs x1, x1, #1\n b.ne 1b\n ldp x29, x30, [sp], #16\n ret", defined: "mcount nop 4 +12", imported: "-"},
	{name: "nop_gcc_O2", asm: "stp x29, x30, [sp, #-48]!\n mov x29, sp\n stp x19, x20, [sp, #16]\n mov x21, x0\n xpaclri\n mov w20, w1\n mov x0, x30\n mov w19, w2\n nop\n ldp x29, x30, [sp], #48\n ret", defined: "mcount nop 4 +32", imported: "-"},
	{name: "nop_gcc_varargs", asm: "stp x29, x30, [sp, #-128]!\n mov x29, sp\n mov x0, x30\n stp x1, x2, [sp, #72]\n str q0, [sp, #96]\n nop\n ldp x29, x30, [sp], #128\n ret", defined: "mcount nop 4 +20", imported: "-"},
	// x0 overwritten after `mov x0, x30`: not gcc's shape.
	{name: "nop_x0_lost", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n mov x0, x30\n mov x0, x1\n nop\n ldp x29, x30, [sp], #16\n ret", defined: "-", imported: "-"},
	// A NOP without gcc's whole shape is not taken.
	{name: "nop_no_lr", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n nop\n ldp x29, x30, [sp], #16\n ret", defined: "-", imported: "-"},
	{name: "nop_entry", asm: "nop\n nop\n ret", defined: "-", imported: "-"},
	{name: "nop_bti_entry", asm: "bti c\n nop\n nop\n ret", defined: "-", imported: "-"},
	{name: "stub", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n mov x0, x30\n bl ftrace_stub\n ldp x29, x30, [sp], #16\n ret", defined: "mcount call 4 +12", hooks: true},
	{name: "tramp", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n mov x0, x30\n bl ftrace_mcount_caller\n ldp x29, x30, [sp], #16\n ret", defined: "mcount call 4 +12", hooks: true},
	{name: "plain", asm: "stp x29, x30, [sp, #-16]!\n mov x29, sp\n bl other\n ldp x29, x30, [sp], #16\n ret", defined: "-", imported: "-"},
}

const arm64Defs = `
	.globl _mcount, ftrace_mcount_caller, ftrace_stub
	.type _mcount, %function
_mcount: ret
	.size _mcount, .-_mcount
	.type ftrace_mcount_caller, %function
ftrace_mcount_caller: ret
	.size ftrace_mcount_caller, .-ftrace_mcount_caller
	.type ftrace_stub, %function
ftrace_stub: ret
	.size ftrace_stub, .-ftrace_stub
`

// decodeArch is one architecture's cases and how to build them.
type decodeArch struct {
	name   string
	cc     string
	pkg    string // the Debian package with cc
	cases  []decodeCase
	defs   string // the "defined" build's hooks and trampolines
	fnType string // @function or %function
	ret    string
}

var decodeArches = []decodeArch{
	{"x86_64", "gcc", "gcc", x86Cases, x86Defs, "@function", "ret"},
	{"arm64", "aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu", arm64Cases, arm64Defs, "%function", "ret"},
}

// needCC fails the test when a compiler is missing, naming its package.
func needCC(t testing.TB, cc, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		t.Fatalf("%s is not installed: run `make deps` or `apt-get install %s`", cc, pkg)
	}
}

// want is what case c must give in a build of the kind hooks
// ("defined", "imported", "none"), or "" when the build leaves c out.
func (c decodeCase) want(hooks string) string {
	switch {
	case hooks == "defined":
		return c.defined
	case hooks == "imported":
		return c.imported
	case c.hooks:
		return ""
	}
	return "-"
}

// decodeProgram writes the cases a build of the kind hooks takes as one
// assembly file, with `other`, `main` and extra definitions.
func decodeProgram(a decodeArch, hooks, extra string) string {
	var b strings.Builder
	b.WriteString("\t.text\n")
	for _, c := range a.cases {
		if c.want(hooks) == "" {
			continue
		}
		fmt.Fprintf(&b, "\t.globl %s\n\t.type %s, %s\n\t.p2align 4\n%s:\n\t%s\n\t.size %s, .-%s\n", c.name, c.name, a.fnType, c.name, c.asm, c.name, c.name)
	}
	fmt.Fprintf(&b, "\t.globl other, main\n\t.type other, %s\nother: %s\n\t.size other, .-other\n", a.fnType, a.ret)
	fmt.Fprintf(&b, "\t.type main, %s\nmain: %s\n\t.size main, .-main\n", a.fnType, a.ret)
	b.WriteString(extra)
	b.WriteString("\t.section .note.GNU-stack,\"\",%progbits\n")
	return b.String()
}

// caseBuilds are the ways the cases are linked.
var caseBuilds = []struct {
	name  string
	hooks string // "defined", "imported" or "none"
	args  []string
}{
	{"defined-static", "defined", []string{"-nostdlib", "-static", "-no-pie", "-Wl,-e,main"}},
	{"defined-pie", "defined", []string{"-nostdlib", "-pie", "-Wl,-e,main"}},
	{"imported-pie", "imported", []string{"-pie"}},
	{"imported-nopie", "imported", []string{"-no-pie"}},
	{"none", "none", []string{"-nostdlib", "-static", "-no-pie", "-Wl,-e,main"}},
}

// buildCases links a's cases for a build of the kind hooks with the link
// flags args and returns the program's path.
func buildCases(t testing.TB, a decodeArch, hooks string, args []string) string {
	t.Helper()
	dir := t.TempDir()
	extra := ""
	if hooks == "defined" {
		extra = a.defs
	}
	src := filepath.Join(dir, "cases.S")
	if err := os.WriteFile(src, []byte(decodeProgram(a, hooks, extra)), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command(a.cc, append(args, src, "-o", prog)...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", a.cc, err, out)
	}
	return prog
}

// TestFindDecoded builds the hand-written functions three ways and checks
// the site FindDecoded finds in each against the case's want: with the
// hooks and trampolines defined in the program (static, and PIE), with
// the hooks imported from the C library (PIE and not), and with no hook
// at all, where nothing is a site and FindLinked says there is no table.
// A call site says where it leads, the hook (StateHook) or trampoline
// (StateTraced) the case calls, as a table's site does.
func TestFindDecoded(t *testing.T) {
	for _, a := range decodeArches {
		for _, bld := range caseBuilds {
			t.Run(a.name+"/"+bld.name, func(t *testing.T) {
				t.Parallel()
				needCC(t, a.cc, a.pkg)
				f, err := elfx.Open(buildCases(t, a, bld.hooks, bld.args))
				if err != nil {
					t.Fatal(err)
				}
				l, err := sites.FindDecoded(f)
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				byName := map[string]decodeCase{}
				for _, c := range a.cases {
					byName[c.name] = c
				}
				for _, s := range l.Sites {
					if s.State.IsCall() {
						want, state := byName[s.Func].wantTarget(), sites.StateHook
						if strings.HasPrefix(want, "ftrace_") {
							state = sites.StateTraced
						}
						if s.Call == nil || s.Call.Name != want || s.State != state {
							t.Errorf("%s: call site leads to %v, state %v; want %s, state %v", s.Func, s.Call, s.State, want, state)
						}
					} else if s.Call != nil {
						t.Errorf("%s: a %v site with a call target %v", s.Func, s.State, s.Call)
					}
					if s.Origin != sites.FromDecode || s.Off != s.FuncOff+sitetest.Symbol(t, f, s.Func) {
						t.Errorf("%s: site %+v: wrong source or address", s.Func, s)
					}
					got[s.Func] = fmt.Sprintf("%v %v %d +%d", s.Kind, s.State.Insn(), s.Len, s.FuncOff)
				}
				cases := 0
				for _, c := range a.cases {
					want := c.want(bld.hooks)
					if want == "" {
						continue
					}
					cases++
					g, ok := got[c.name]
					if !ok {
						g = "-"
					}
					if g != want {
						t.Errorf("%s: found %q, want %q\n%s", c.name, g, want, indent(c.asm))
					}
					delete(got, c.name)
				}
				for fn, s := range got {
					t.Errorf("%s: unexpected site %s", fn, s)
				}
				if cases < 5 {
					t.Fatalf("only %d cases built", cases)
				}
				l2, err := sites.FindLinked(f)
				if bld.hooks == "none" {
					if !errors.Is(err, sites.ErrNoTable) {
						t.Errorf("FindLinked on a program without hooks: %v, want ErrNoTable", err)
					}
				} else if err != nil || len(l2.Sites) != len(l.Sites) {
					t.Errorf("FindLinked without a table: %v, want the decoded sites", err)
				}
			})
		}
	}
}

func indent(asm string) string {
	return "\t" + strings.ReplaceAll(asm, "\n", "\n\t")
}

// TestFindDecodedMany: in a program of 200,000 functions, half in gcc's
// -pg shape (the scan after the prologue) and half -mfentry, every
// function's site is found. How long that takes is a target of `make
// bench` (bench/enable, "sites decoded"); the CPU time is logged here.
func TestFindDecodedMany(t *testing.T) {
	needCC(t, "gcc", "gcc")
	const n = 200_000
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("\t.text\n")
	for i := 0; i < n; i++ {
		body := "call __fentry__\n\tret"
		switch i % 4 {
		case 1:
			body = "push %rbp\n\tmov %rsp,%rbp\n\tpush %rbx\n\tsub $24,%rsp\n\tcall mcount\n\tleave\n\tret"
		case 2: // clang -O2's shape: registers copied before the call
			body = "push %rbp\n\tmov %rsp,%rbp\n\tpush %r15\n\tpush %r14\n\tpush %rbx\n\tpush %rax\n\tmov %edi,%ebx\n\tmov %rsi,%r14\n\tmov %edx,-0x2c(%rbp)\n\tcall mcount\n\tleave\n\tret"
		case 3:
			body = "endbr64\n\tcall __fentry__\n\tret"
		}
		fmt.Fprintf(&b, "\t.globl f%d\n\t.type f%d, @function\nf%d:\n\t%s\n\t.size f%d, .-f%d\n", i, i, i, body, i, i)
	}
	b.WriteString("\t.globl main\n\t.type main, @function\nmain: ret\n\t.size main, .-main\nother: ret\n" + x86Defs)
	b.WriteString("\t.section .note.GNU-stack,\"\",@progbits\n")
	src := filepath.Join(dir, "many.s")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "many")
	if out, err := exec.Command("gcc", "-nostdlib", "-static", "-no-pie", "-Wl,-e,main", src, "-o", prog).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	before := cpuTime(t)
	_, l := sitetest.Decoded(t, prog)
	t.Logf("%d functions: opened and decoded in %v of CPU time", n, cpuTime(t)-before)
	if len(l.Sites) != n {
		t.Fatalf("%d sites, want %d", len(l.Sites), n)
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// FuzzFindDecoded decodes arbitrary bytes as a linked file. Nothing may
// panic; sites that are found lie in order, one per function, each of a
// length some kind of site has, near its function's start; decoding the
// same bytes twice gives the same sites. Seeds: the case programs, linked
// every way TestFindDecoded links them.
//
//	go test -run '^$' -fuzz '^FuzzFindDecoded$' -fuzztime 3m -fuzzminimizetime 5s ./sites
func FuzzFindDecoded(f *testing.F) {
	for _, a := range decodeArches {
		needCC(f, a.cc, a.pkg)
		for _, bld := range caseBuilds {
			f.Add(fixture.Read(f, buildCases(f, a, bld.hooks, bld.args))[0])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzing.FailOnPanic(t)
		ef, err := elfx.Parse("fuzz", data)
		if err != nil {
			return
		}
		l, err := sites.FindDecoded(ef)
		if err != nil {
			return
		}
		for i, s := range l.Sites {
			if i > 0 && s.Off-s.FuncOff <= l.Sites[i-1].Off-l.Sites[i-1].FuncOff {
				t.Errorf("site %d at %#x (%s) is not in a function after the previous one's", i, s.Off, s.Func)
			}
			if s.Len < 4 || s.Len > 6 || s.FuncOff >= 256 || s.Origin != sites.FromDecode {
				t.Errorf("site %+v", s)
			}
		}
		l2, err := sites.FindDecoded(ef)
		if err != nil || fmt.Sprint(l2.Sites) != fmt.Sprint(l.Sites) {
			t.Errorf("a second decoding differs: %v", err)
		}
	})
}
