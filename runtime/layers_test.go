package runtime

import (
	"bytes"
	"debug/elf"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"ftpatch/arch"
	"ftpatch/internal/callgraph"
	"ftpatch/isa"
)

// measure builds the runtime's call graph and measures it with the
// layer map in file.
func measure(t *testing.T, file string) *callgraph.Measure {
	t.Helper()
	src, err := fs.Sub(sources, "src")
	if err != nil {
		t.Fatal(err)
	}
	g, err := callgraph.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := callgraph.ParseLayers(f, file)
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.Measure(l)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLayering runs the layer check over the runtime with layers.txt
// (a folder a layer, lowest first: abi.h and ftrace.h, arch/, core/,
// record/, patch/, tracers/, process/, module/): every file has a layer
// (layers.txt claims folders, so a file left in src/ itself fails it),
// no call, reference or include runs up from a lower layer to a higher,
// and no circle runs between layers. A lower layer tells a higher one
// something only through what the higher registers (core/ftrt.h's
// ftrt_modules_calls, patch/patch.h's ftrt_patch_calls, record/tracer.h's
// ftrt_record_calls, arch/site.h's ftrt_arch_entries; lifetime.c wires
// them). It logs what it measures.
func TestLayering(t *testing.T) {
	m := measure(t, "layers.txt")
	t.Logf("%d files, %d calls between files (%d pairs), %d running up (%d calls, %d references, %d includes), %d circles between layers",
		m.Files, m.Calls, m.CallPairs, len(m.Up), m.UpCount(callgraph.CallEdge), m.UpCount(callgraph.RefEdge),
		m.UpCount(callgraph.IncludeEdge), len(m.LayerCircles))
	for _, e := range m.Up {
		t.Errorf("running up: %s (a lower layer calls a higher one only through what the higher registers)", callgraph.EdgeString(e))
	}
	for _, c := range m.LayerCircles {
		t.Errorf("circle between layers: %v", c)
	}
}

// TestCallGraphSeesCalls: the call graph's tokenizer misses no call the
// compiler sees. Each C file of the runtime for the host's architecture
// is compiled at -O0 (so calls stay calls, and a header's inline
// functions are compiled into each file that uses them); every symbol
// its object needs that another file of the runtime defines must be an
// edge of the graph from the file or from a header it includes. The
// exception: the hooks and trampolines abi.h's X-macro lists
// (FTRT_TARGETS_*), which patch.c names through FTRT_TARGETS.
func TestCallGraphSeesCalls(t *testing.T) {
	var host arch.Arch
	switch goruntime.GOARCH {
	case "amd64":
		host = arch.X86_64
	case "arm64":
		host = arch.ARM64
	default:
		t.Fatalf("package runtime: no runtime port for GOARCH %s", goruntime.GOARCH)
	}
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatal("package runtime: cc, which TestCallGraphSeesCalls compiles the runtime with, is not installed")
	}
	src, err := fs.Sub(sources, "src")
	if err != nil {
		t.Fatal(err)
	}
	g, err := callgraph.Build(src)
	if err != nil {
		t.Fatal(err)
	}
	edges := map[string]map[string]bool{} // file -> name -> linked
	includes := map[string][]string{}
	for _, e := range g.Edges {
		if e.Kind == callgraph.IncludeEdge {
			includes[e.From] = append(includes[e.From], e.To)
			continue
		}
		if edges[e.From] == nil {
			edges[e.From] = map[string]bool{}
		}
		edges[e.From][e.Name] = true
	}
	abi, err := sources.ReadFile("src/abi.h")
	if err != nil {
		t.Fatal(err)
	}
	xmacro := map[string]bool{}
	for _, m := range regexp.MustCompile(`X\(\w+, (\w+)\)`).FindAllSubmatch(abi, -1) {
		xmacro[string(m[1])] = true
	}
	if len(xmacro) == 0 {
		t.Fatal("abi.h lists no hook in its FTRT_TARGETS_* X-macros")
	}

	// The runtime's sources as they are embedded, and what each object
	// of the host's runtime defines.
	dir := t.TempDir()
	err = fs.WalkDir(sources, "src", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, _, err := files(host)
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string // the C and assembly files, from src
	for _, p := range rt {
		if ext := path.Ext(p); ext == ".c" || ext == ".S" {
			srcs = append(srcs, strings.TrimPrefix(p, "src/"))
		}
	}
	defined := map[string]string{} // symbol -> file
	needs := map[string][]string{}
	for _, f := range srcs {
		obj := filepath.Join(dir, strings.ReplaceAll(f, "/", "_")+".o")
		cmd := exec.Command("cc", append(append([]string{"-O0", "-fPIC", "-fno-stack-protector"}, includeFlags(filepath.Join(dir, "src"))...), "-c", "-o", obj, f)...)
		cmd.Dir = filepath.Join(dir, "src")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cc %s: %v\n%s", f, err, out)
		}
		ef, err := elf.Open(obj)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := ef.Symbols()
		ef.Close()
		if err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		for _, s := range syms {
			bind := elf.ST_BIND(s.Info)
			if bind != elf.STB_GLOBAL && bind != elf.STB_WEAK {
				continue
			}
			if s.Section == elf.SHN_UNDEF {
				needs[f] = append(needs[f], s.Name)
			} else if elf.ST_TYPE(s.Info) == elf.STT_FUNC || elf.ST_TYPE(s.Info) == elf.STT_NOTYPE {
				defined[s.Name] = f
			}
		}
	}
	reach := func(f string) []string {
		seen := []string{f}
		for i := 0; i < len(seen); i++ {
			for _, h := range includes[seen[i]] {
				if !slices.Contains(seen, h) {
					seen = append(seen, h)
				}
			}
		}
		return seen
	}
	checked := 0
	for _, f := range srcs {
		for _, name := range needs[f] {
			def, ok := defined[name]
			if !ok || def == f || xmacro[name] {
				continue
			}
			checked++
			if !slices.ContainsFunc(reach(f), func(h string) bool { return edges[h][name] }) {
				t.Errorf("%s needs %s (defined in %s), which the call graph does not link", f, name, def)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no object needed a symbol of another: the objects were not read")
	}
	t.Logf("%d files compiled, %d symbols they need of one another found in the call graph", len(srcs), checked)
}

// TestLayerInterfaces: each folder of src but the module stub's is a
// layer of layers.txt by the same name, and has one interface header
// named after it (core/core.h), whose opening comment says it is the
// layer's interface and what the layer owns, and which compiles on its
// own for each architecture: nothing of the runtime includes it yet, so
// this is what keeps it whole.
func TestLayerInterfaces(t *testing.T) {
	f, err := os.Open("layers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := callgraph.ParseLayers(f, "layers.txt")
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := fs.ReadDir(sources, "src")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, sources); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "module" {
			continue
		}
		n++
		h := path.Join(d.Name(), d.Name()+".h")
		if i, err := l.Of(h); err != nil || l.Names[i] != d.Name() {
			t.Errorf("layers.txt puts %s in layer %v (%v), not %s: a folder is the layer of its name", h, l.Names[i], err, d.Name())
		}
		b, err := sources.ReadFile("src/" + h)
		if err != nil {
			t.Errorf("src/%s/ has no interface header: %v", d.Name(), err)
			continue
		}
		if !bytes.HasPrefix(b, []byte("/*\n * The "+d.Name())) || !bytes.Contains(b, []byte("interface")) {
			t.Errorf("%s does not open with a comment saying it is the %s layer's interface", h, d.Name())
		}
		for _, a := range []arch.Arch{arch.X86_64, arch.ARM64} {
			cc := isa.For(a).CC
			cmd := exec.Command(cc[0], append(append(append(cc[1:], cflags...), isa.For(a).RuntimeCFlags...), append(includeFlags(filepath.Join(dir, "src")), "-fsyntax-only", "-x", "c", "-")...)...)
			cmd.Stdin = strings.NewReader("#include \"" + h + "\"\n")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s does not compile alone for %v (%s): %v\n%s", h, a, strings.Join(cmd.Args, " "), err, out)
			}
		}
	}
	if n == 0 {
		t.Fatal("no folder under src")
	}
}
