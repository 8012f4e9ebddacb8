package argspec

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/trace"
)

// A specCase is a -A (ret false) or -R text and what it reads as on
// each architecture: its canonical text, or "" for a refusal.
type specCase struct {
	text     string
	ret      bool
	x86, a64 string
}

// specCases: every format, spelling and default; argN past the
// registers, stack+OFF, structs and long doubles; the limits of each
// architecture's registers and of the stack an item reads; what the
// grammar refuses.
var specCases = []specCase{
	{"parse@arg1,arg2/s", false, "parse@arg1/i64,arg2/s", "parse@arg1/i64,arg2/s"},
	{"f@arg1/d,arg2/i,arg3/u,arg4/x,arg5/p,arg6/c", false, "f@arg1/i64,arg2/i64,arg3/u64,arg4/x64,arg5/p,arg6/c", "f@arg1/i64,arg2/i64,arg3/u64,arg4/x64,arg5/p,arg6/c"},
	{"f@arg1/i8,arg2/i16,arg3/i32,arg4/i64,arg5/d32", false, "f@arg1/i8,arg2/i16,arg3/i32,arg4/i64,arg5/i32", "f@arg1/i8,arg2/i16,arg3/i32,arg4/i64,arg5/i32"},
	{"f@arg1/u8,arg2/u16,arg3/u32,arg4/u64,arg5/x8,arg6/x32", false, "f@arg1/u8,arg2/u16,arg3/u32,arg4/u64,arg5/x8,arg6/x32", "f@arg1/u8,arg2/u16,arg3/u32,arg4/u64,arg5/x8,arg6/x32"},
	{"f@fparg1,fparg2/f,fparg3/f32,fparg4/f64,fparg8", false, "f@fparg1/f64,fparg2/f64,fparg3/f32,fparg4/f64,fparg8/f64", "f@fparg1/f64,fparg2/f64,fparg3/f32,fparg4/f64,fparg8/f64"},
	{"f@arg1/b,?,arg2/e:color,arg3/e:state.2", false, "f@arg1/b,?,arg2/e:color,arg3/e:state.2", "f@arg1/b,?,arg2/e:color,arg3/e:state.2"},
	{"a*@arg1;;b?[xy]@fparg1;", false, "a*@arg1/i64;b?[xy]@fparg1/f64", "a*@arg1/i64;b?[xy]@fparg1/f64"},
	{"f@arg7", false, "f@arg7/i64", "f@arg7/i64"},
	{"f@arg8/x,arg9/s,arg10/e:color", false, "f@arg8/x64,arg9/s,arg10/e:color", "f@arg8/x64,arg9/s,arg10/e:color"},
	{"f@arg70", false, "f@arg70/i64", "f@arg70/i64"},
	{"f@arg71", false, "", "f@arg71/i64"},
	{"f@arg72", false, "", "f@arg72/i64"},
	{"f@arg73", false, "", ""},
	{"f@arg70/{i32,i32}", false, "f@arg70/{i32,i32}", "f@arg70/{i32,i32}"},
	{"f@arg70/{i64,i32}", false, "", "f@arg70/{i64,i32}"},
	{"f@arg72/{i64,i32}", false, "", ""},
	{"f@fparg9", false, "", ""},
	{"f@stack+0,stack+8/u8,stack+16/e:color,stack+504/s", false, "f@stack+0/i64,stack+8/u8,stack+16/e:color,stack+504/s", "f@stack+0/i64,stack+8/u8,stack+16/e:color,stack+504/s"},
	{"f@stack+8/f80", false, "f@stack+8/f80", ""},
	{"f@stack+16/f128,stack+32/f,stack+40/f32,stack+48/f64", false, "f@stack+16/f128,stack+32/f64,stack+40/f32,stack+48/f64", "f@stack+16/f128,stack+32/f64,stack+40/f32,stack+48/f64"},
	{"f@stack+496/f128", false, "f@stack+496/f128", "f@stack+496/f128"},
	{"f@stack+504/f128", false, "", ""},
	{"f@stack+512", false, "", ""},
	{"f@stack+4", false, "", ""},
	{"f@stack+00", false, "", ""},
	{"f@stack+08", false, "", ""},
	{"f@stack+", false, "", ""},
	{"f@stack-8", false, "", ""},
	{"f@stack8", false, "", ""},
	{"f@stack+99999999999999999999999", false, "", ""},
	{"f@fparg1/f128,fparg2/f80", false, "", ""},
	{"f@fparg1/f128", false, "f@fparg1/f128", "f@fparg1/f128"},
	{"f@arg1/f128", false, "", ""},
	{"f@arg1/{i32,i32},arg2/{d,u8},arg3/{c,b,p}", false, "f@arg1/{i32,i32},arg2/{i64,u8},arg3/{c,b,p}", "f@arg1/{i32,i32},arg2/{i64,u8},arg3/{c,b,p}"},
	{"f@arg1/{i8,{i32,c},...},?,stack+8/{c,{i16,i8}}", false, "f@arg1/{i8,{i32,c},...},?,stack+8/{c,{i16,i8}}", "f@arg1/{i8,{i32,c},...},?,stack+8/{c,{i16,i8}}"},
	{"f@arg1/{i64,i64,i64}", false, "", ""},
	{"f@stack+0/{i64,i64,i64},*arg1/{d,d,d},*stack+32/{x,x,x,x}", false, "f@stack+0/{i64,i64,i64},*arg1/{i64,i64,i64},*stack+32/{x64,x64,x64,x64}", "f@stack+0/{i64,i64,i64},*arg1/{i64,i64,i64},*stack+32/{x64,x64,x64,x64}"},
	{"f@*arg9/{i32},*stack+504/{i64,i64,i64,i64}", false, "f@*arg9/{i32},*stack+504/{i64,i64,i64,i64}", "f@*arg9/{i32},*stack+504/{i64,i64,i64,i64}"},
	{"f@stack+496/{i64,i64,i64}", false, "", ""},
	{"f@*arg1", false, "", ""},
	{"f@*arg1/i32", false, "", ""},
	{"f@*fparg1/{f64}", false, "", ""},
	{"f@**arg1/{i32}", false, "", ""},
	{"f@*?", false, "", ""},
	{"f@fparg1/{f32,f32,f32}", false, "f@fparg1/{f32,f32,f32}", "f@fparg1/{f32,f32,f32}"},
	{"f@fparg1/{f32,f64}", false, "f@fparg1/{f32,f64}", ""},
	{"f@fparg7/{f64,f64}", false, "f@fparg7/{f64,f64}", "f@fparg7/{f64,f64}"},
	{"f@fparg8/{f64,f64}", false, "", ""},
	{"f@fparg7/{f64,f64,f64}", false, "", ""},
	{"f@fparg8/{f32,f32}", false, "f@fparg8/{f32,f32}", ""},
	{"f@fparg1/{f64,f64,f64,f64}", false, "", "f@fparg1/{f64,f64,f64,f64}"},
	{"f@fparg1/{{f32,f32},f32}", false, "f@fparg1/{{f32,f32},f32}", "f@fparg1/{{f32,f32},f32}"},
	{"f@fparg1/{f32,f32,f32,f32,f32}", false, "", ""},
	{"f@fparg1/{f128,f128}", false, "", "f@fparg1/{f128,f128}"},
	{"f@fparg1/{i32}", false, "", ""},
	{"f@fparg1/{f32,i32}", false, "", ""},
	{"f@arg1+fparg1/{i64,f64},arg2+fparg2/{f32,f32,i32},arg4+fparg8/{f64,i64}", false, "f@arg1+fparg1/{i64,f64},arg2+fparg2/{f32,f32,i32},arg4+fparg8/{f64,i64}", ""},
	{"f@arg6+fparg8/{i32,f32,f64},arg1+fparg1/{f64},arg2+fparg1/{d,d}", false, "f@arg6+fparg8/{i32,f32,f64},arg1+fparg1/{f64},arg2+fparg1/{i64,i64}", ""},
	{"f@arg6+fparg1/{i64,i64}", false, "", ""},
	{"f@arg7+fparg1/{f64}", false, "", ""},
	{"f@arg1+fparg8/{f64,f64}", false, "", ""},
	{"f@arg1+fparg9/{i64}", false, "", ""},
	{"f@arg1+fparg0/{i64}", false, "", ""},
	{"f@arg1+fparg1/{i64,i64,i64}", false, "", ""},
	{"f@arg1+fparg1", false, "", ""},
	{"f@arg1+fparg1/i64", false, "", ""},
	{"f@*arg1+fparg1/{i64}", false, "", ""},
	{"f@stack+8+fparg1/{i64}", false, "", ""},
	{"f@fparg1+fparg1/{i64}", false, "", ""},
	{"f@arg1+arg2/{i64}", false, "", ""},
	{"r/{i64,f64};s/{f32,{f32,i32}}", true, "r/{i64,f64};s/{f32,{f32,i32}}", "r/{i64,f64};s/{f32,{f32,i32}}"},
	{"f@arg1/{}", false, "", ""},
	{"f@arg1/{i32", false, "", ""},
	{"f@arg1/{i32}}", false, "", ""},
	{"f@arg1/i32}", false, "", ""},
	{"f@arg1/{i32,}", false, "", ""},
	{"f@arg1/{...}", false, "", ""},
	{"f@arg1/{i32,...,i32}", false, "", ""},
	{"f@arg1/{{i32,...}}", false, "", ""},
	{"f@arg1/{s}", false, "", ""},
	{"f@arg1/{e:color}", false, "", ""},
	{"f@arg1/{i7}", false, "", ""},
	{"f@arg1/{f16}", false, "", ""},
	{"f@arg1/{p8}", false, "", ""},
	{"f@stack+0/{" + strings.Repeat("c,", 30) + "c}", false, "f@stack+0/{" + strings.Repeat("c,", 30) + "c}", "f@stack+0/{" + strings.Repeat("c,", 30) + "c}"},
	{"f@stack+0/{" + strings.Repeat("c,", 31) + "c}", false, "", ""},
	{"f@stack+0/{i64,i64,i64,i64}", false, "f@stack+0/{i64,i64,i64,i64}", "f@stack+0/{i64,i64,i64,i64}"},
	{"f@stack+0/{i64,i64,i64,i64,c}", false, "", ""},
	{"f@stack+0/{c,i64,c},arg1/{c,i64},arg2/{i16,c,i32}", false, "f@stack+0/{c,i64,c},arg1/{c,i64},arg2/{i16,c,i32}", "f@stack+0/{c,i64,c},arg1/{c,i64},arg2/{i16,c,i32}"},
	{"f@arg1/{c,i64,c}", false, "", ""},
	{"f@stack+0/{c,i64,c,i64,c}", false, "", ""},
	{"f@stack+0/{i64,i64,i64,i32,{c,f80}}", false, "", ""},
	{"f@arg0", false, "", ""},
	{"f@arg01", false, "", ""},
	{"f@arg4294967297", false, "", ""},
	{"f@arg99999999999999999999999", false, "", ""},
	{"f@arg", false, "", ""},
	{"f@fparg", false, "", ""},
	{"f@arg1/", false, "", ""},
	{"f@arg1/q", false, "", ""},
	{"f@arg1/i7", false, "", ""},
	{"f@arg1/i128", false, "", ""},
	{"f@arg1/p64", false, "", ""},
	{"f@arg1/s8", false, "", ""},
	{"f@arg1/f", false, "", ""},
	{"f@arg1/f64", false, "", ""},
	{"f@fparg1/d", false, "", ""},
	{"f@fparg1/f16", false, "", ""},
	{"f@fparg1/e:color", false, "", ""},
	{"f@arg1/e:", false, "", ""},
	{"f@arg1/e:1color", false, "", ""},
	{"f@arg1/e:col-or", false, "", ""},
	{"f@arg1/e:color.", false, "", ""},
	{"f@arg1/e:color.x", false, "", ""},
	{"f@arg1/e:" + strings.Repeat("a", 64), false, "f@arg1/e:" + strings.Repeat("a", 64), "f@arg1/e:" + strings.Repeat("a", 64)},
	{"f@arg1/e:" + strings.Repeat("a", 65), false, "", ""},
	{"f@arg1/?", false, "", ""},
	{"f@?1", false, "", ""},
	{"f@", false, "", ""},
	{"f@arg1,,arg2", false, "", ""},
	{"f", false, "", ""},
	{"@arg1", false, "", ""},
	{"a b@arg1", false, "", ""},
	{"a,b@arg1", false, "", ""},
	{"a/b@arg1", false, "", ""},
	{"ok@arg1;bad@arg0", false, "", ""},
	{"f@" + strings.Repeat("arg1,", 14) + "arg1", false, "f@" + strings.Repeat("arg1/i64,", 14) + "arg1/i64", "f@" + strings.Repeat("arg1/i64,", 14) + "arg1/i64"},
	{"f@" + strings.Repeat("arg1,", 15) + "arg1", false, "", ""},
	{"FARG@ARG1", false, "", ""},
	{"f@" + strings.Repeat("arg1/{i32,i32},", 14) + "stack+0/{c}", false, "f@" + strings.Repeat("arg1/{i32,i32},", 14) + "stack+0/{c}", "f@" + strings.Repeat("arg1/{i32,i32},", 14) + "stack+0/{c}"},
	{"r/f80;s/f128;t/{i32,i32};u/{f32,f32};v/{f,f}", true, "r/f80;s/f128;t/{i32,i32};u/{f32,f32};v/{f64,f64}", ""},
	{"s/f128;t/{i32,i32};u/{f32,f32};v/{f,f};w/{f64,f64,f64}", true, "", "s/f128;t/{i32,i32};u/{f32,f32};v/{f64,f64};w/{f64,f64,f64}"},
	{"r/{f32,f64}", true, "r/{f32,f64}", "r/{f32,f64}"},
	{"r/{f32,f32,f32,f32,f32}", true, "", ""},
	{"r/{i64,i64,i64}", true, "", ""},
	{"r/*{i64,i64,i64}", true, "r/*{i64,i64,i64}", ""},
	{"r/{f80}", true, "", "r/{f80}"},
	{"r/{i64,f80}", true, "", ""},
	{"r/*", true, "", ""},
	{"r/*i32", true, "", ""},
	{"r/**{i32}", true, "", ""},
	{"r/{i32,i32},x", true, "", ""},
	{"parse;name_of/s;ratio/f;r32/f32;b/b;e/e:color;n/?;u/u16", true, "parse/i64;name_of/s;ratio/f64;r32/f32;b/b;e/e:color;n/?;u/u16", "parse/i64;name_of/s;ratio/f64;r32/f32;b/b;e/e:color;n/?;u/u16"},
	{"x/x;d/d;i/i8;p/p;c/c", true, "x/x64;d/i64;i/i8;p/p;c/c", "x/x64;d/i64;i/i8;p/p;c/c"},
	{"f/f8", true, "", ""},
	{"f/", true, "", ""},
	{"f/z", true, "", ""},
	{"/d", true, "", ""},
	{"f@x/d", true, "", ""},
	{"f/arg1", true, "", ""},
}

// TestParse: each text of specCases reads as its canonical form on
// each architecture, or is refused with a *SpecError naming the entry.
func TestParse(t *testing.T) {
	for _, c := range specCases {
		for _, a := range []arch.Arch{arch.X86_64, arch.ARM64} {
			want := c.x86
			if a == arch.ARM64 {
				want = c.a64
			}
			got, err := canonical(c.text, c.ret, a)
			switch {
			case want == "" && err == nil:
				t.Errorf("%v %q: read as %q, want an error", a, c.text, got)
			case want == "" && (!errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), `"`)):
				t.Errorf("%v %q: error %v, want a SpecError", a, c.text, err)
			case want != "" && err != nil:
				t.Errorf("%v %q: %v", a, c.text, err)
			case want != "" && got != want:
				t.Errorf("%v %q: read as %q, want %q", a, c.text, got, want)
			}
		}
	}
}

// canonical is text read on architecture a, written back canonical.
func canonical(text string, ret bool, a arch.Arch) (string, error) {
	if ret {
		e, err := ParseRetval(text, a)
		return Text(e, true), err
	}
	e, err := ParseArgs(text, a)
	return Text(e, false), err
}

// TestErrors: what a refusal says, for the cases a user meets.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		text string
		ret  bool
		a    arch.Arch
		want string
	}{
		{"parse@arg0", false, arch.X86_64, `"parse@arg0": item "arg0": want a number from 1 after "arg"`},
		{"parse@fparg9", false, arch.X86_64, `"parse@fparg9": item "fparg9": x86_64 passes 8 floating-point arguments in registers (fparg1-fparg8); one on the stack is stack+OFF/f64`},
		{"parse@arg71", false, arch.X86_64, `"parse@arg71": item "arg71": x86_64's arg1-arg6 are registers, arg7-arg70 the stack's words after them, in the first 512 bytes of its arguments there`},
		{"parse@arg72/{i64,i64}", false, arch.ARM64, `"parse@arg72/{i64,i64}": item "arg72/{i64,i64}": arm64's arg1-arg8 are registers, arg9-arg71 the stack's words after them, in the first 512 bytes of its arguments there`},
		{"parse@stack+512", false, arch.ARM64, `"parse@stack+512": item "stack+512": it reads past the first 512 bytes of the stack's arguments, the most an item reads`},
		{"parse@stack+12", false, arch.ARM64, `"parse@stack+12": item "stack+12": the stack's arguments are 8-byte words: OFF is a multiple of 8`},
		{"parse@stack+08", false, arch.ARM64, `"parse@stack+08": item "stack+08": want a number from 0 after "stack+"`},
		{"parse@stack+8/f80", false, arch.ARM64, `"parse@stack+8/f80": item "stack+8/f80": format "f80": arm64 has no 80-bit long double (its long double is f128)`},
		{"parse@fparg1/f80", false, arch.X86_64, `"parse@fparg1/f80": item "fparg1/f80": format "f80": no vector register holds one: x86_64 passes a long double on the stack (stack+OFF/f80)`},
		{"parse@arg1/{i64,i64,i64}", false, arch.X86_64, `"parse@arg1/{i64,i64,i64}": item "arg1/{i64,i64,i64}": 24 bytes: a struct in registers has at most 16 (two)`},
		{"parse@arg1/{i64,i64,i64,i64,i64}", false, arch.X86_64, `"parse@arg1/{i64,i64,i64,i64,i64}": item "arg1/{i64,i64,i64,i64,i64}": "{i64,i64,i64,i64,i64}": 40 bytes: a struct's recorded members are at most 32 (end with ... for the rest)`},
		{"parse@arg1/{i32,s}", false, arch.X86_64, `"parse@arg1/{i32,s}": item "arg1/{i32,s}": "{i32,s}": member "s": want d i u x (and bits), p, c, b, f32 f64 f80 f128, or {...}`},
		{"parse@*arg1/i64", false, arch.X86_64, `"parse@*arg1/i64": item "*arg1/i64": * reads the struct a pointer points to: its format is {...}`},
		{"parse@fparg1/{f32,f64}", false, arch.ARM64, `"parse@fparg1/{f32,f64}": item "fparg1/{f32,f64}": in vector registers, arm64 passes a struct of 1 to 4 floating-point members of one type, one a register`},
		{"parse@arg1+fparg1/{i64,f64}", false, arch.ARM64, `"parse@arg1+fparg1/{i64,f64}": item "arg1+fparg1/{i64,f64}": arm64 passes a struct in one kind of register: argN/{...} or fpargN/{...}`},
		{"parse@arg6+fparg1/{i64,i64}", false, arch.X86_64, `"parse@arg6+fparg1/{i64,i64}": item "arg6+fparg1/{i64,i64}": its integer eightbytes take arg6-arg7, past arg6`},
		{"parse@arg1/q", false, arch.X86_64, `"parse@arg1/q": item "arg1/q": unknown format "q": want d i u x (8 16 32 or 64 bits after: i32), p s c b, e:ENUM, f f32 f64 f80 f128 (floating point) or {...} (a struct)`},
		{"parse@argv", false, arch.ARM64, `"parse@argv": item "argv": want a number from 1 after "arg"`},
		{"parse@pointer", false, arch.ARM64, `"parse@pointer": item "pointer": want argN[/FMT], fpargN[/FMT], stack+OFF[/FMT], *argN/{...}, *stack+OFF/{...}, argN+fpargM/{...} or ?`},
		{"parse/w", true, arch.X86_64, `"parse/w": unknown format "w": want d i u x (8 16 32 or 64 bits after: i32), p s c b, e:ENUM, f f32 f64 f80 f128 (floating point) or {...} (a struct)`},
		{"parse/*{i64,i64,i64}", true, arch.ARM64, `"parse/*{i64,i64,i64}": format "*{i64,i64,i64}": arm64 returns no address of a struct it returns in memory`},
		{"parse/{i64,i64,i64}", true, arch.X86_64, `"parse/{i64,i64,i64}": format "{i64,i64,i64}": 24 bytes: a struct in registers has at most 16`},
		{"parse/{f64,f64,f64}", true, arch.X86_64, `"parse/{f64,f64,f64}": format "{f64,f64,f64}": 24 bytes: x86_64 returns a struct over 16 bytes in memory (*{...})`},
	} {
		_, err := canonical(c.text, c.ret, c.a)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error\n%v\nwant\n%s", c.text, err, c.want)
		}
	}
}

// structSizes is what testdata/parse.c prints after a text's
// canonical form: " S" and the bytes of each struct item, "F" after a
// return value's read from floating-point registers, "I" and the mask
// of its eightbytes that hold more than floats.
func structSizes(text string, ret bool, a arch.Arch) string {
	var entries []Entry
	if ret {
		entries, _ = ParseRetval(text, a)
	} else {
		entries, _ = ParseArgs(text, a)
	}
	var b strings.Builder
	for _, e := range entries {
		for _, it := range e.Items {
			if it.Fmt != Struct {
				continue
			}
			l, _ := trace.ParseLayout(it.Layout)
			fmt.Fprintf(&b, " S%d", l.Size())
			if ret && it.FP {
				b.WriteString("F")
			}
			fmt.Fprintf(&b, "I%d", l.Integers())
		}
	}
	return b.String()
}

// TestRuntimeParser: the runtime's parser (runtime/src/tracers/argspec.c),
// built for each architecture (arm64's run under qemu-aarch64), reads
// every text of specCases, and more made from them, as package argspec
// does: the same refusals, the same items.
func TestRuntimeParser(t *testing.T) {
	src, err := filepath.Abs(filepath.Join("..", "runtime", "src"))
	if err != nil {
		t.Fatal(err)
	}
	// Each case, and each of its entries' items alone as args and as a
	// return value's format, so every format meets both places.
	var texts []specCase
	for _, c := range specCases {
		texts = append(texts, c)
		for e := range strings.SplitSeq(c.text, ";") {
			_, items, _ := strings.Cut(e, "@")
			for _, it := range splitItems(items) {
				_, f, _ := strings.Cut(it, "/")
				texts = append(texts, specCase{text: "g@" + it}, specCase{text: "g/" + f, ret: true}, specCase{text: "g@arg1/" + f}, specCase{text: "g@fparg2/" + f})
			}
		}
	}
	for _, a := range []struct {
		arch   arch.Arch
		cc     string
		run    []string
		static bool
	}{
		{arch.X86_64, "gcc", nil, false},
		{arch.ARM64, "aarch64-linux-gnu-gcc", []string{"qemu-aarch64"}, true},
	} {
		t.Run(a.arch.String(), func(t *testing.T) {
			for _, tool := range append([]string{a.cc}, a.run...) {
				if _, err := exec.LookPath(tool); err != nil {
					t.Fatalf("package argspec's test needs %s (scripts/deps.sh installs it): %v", tool, err)
				}
			}
			bin := filepath.Join(t.TempDir(), "parse")
			args := []string{"-std=gnu11", "-O1", "-Wall", "-Werror", "-I", src, "-o", bin, filepath.Join("testdata", "parse.c"), filepath.Join(src, "tracers", "argspec.c")}
			if a.static {
				args = append(args, "-static")
			}
			if out, err := exec.Command(a.cc, args...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", a.cc, err, out)
			}
			var in strings.Builder
			for _, c := range texts {
				kind := "A"
				if c.ret {
					kind = "R"
				}
				fmt.Fprintf(&in, "%s %s\n", kind, c.text)
			}
			argv := append(append([]string{}, a.run...), bin)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Stdin = strings.NewReader(in.String())
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", strings.Join(argv, " "), err)
			}
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			i := 0
			for ; sc.Scan(); i++ {
				if i >= len(texts) {
					t.Fatalf("the parser printed more lines than %d specs", len(texts))
				}
				c := texts[i]
				want := "bad"
				if got, err := canonical(c.text, c.ret, a.arch); err == nil {
					want = "ok " + got + structSizes(c.text, c.ret, a.arch)
				}
				if sc.Text() != strings.TrimSuffix(want, " ") && sc.Text() != want {
					t.Errorf("%q (ret %v): the runtime reads %q, package argspec %q", c.text, c.ret, sc.Text(), want)
				}
			}
			if i != len(texts) {
				t.Errorf("the parser printed %d lines for %d specs", i, len(texts))
			}
		})
	}
}
