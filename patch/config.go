package patch

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"path"
	"strings"

	"ftpatch/elfx"
	"ftpatch/runtime/abi"
)

// ConfigSection is the section holding the runtime's config record
// (runtime/src/core/config.c).
const ConfigSection = abi.ConfigSection

// FlagPatched (FTRT_CFG_PATCHED) says ftpatch wrote every site: each is a
// NOP or a call to the trampoline its kind calls, so the runtime's
// load-time pass only checks them.
const FlagPatched uint32 = abi.ConfigPatched

// FlagNoTable (FTRT_CFG_NOTABLE) says the file has no site table: ftpatch
// found its sites by decoding function entries, so the runtime has
// nothing to check them against and starts the recorded tracer on the
// record's word (ftpatch verify is where such a file is checked).
const FlagNoTable uint32 = abi.ConfigNoTable

// FlagCtl (FTRT_CFG_CTL) says the program listens for ftpatch ctl, as
// with FTRACE_CTL=1 (ftpatch enable --ctl).
const FlagCtl uint32 = abi.ConfigCtl

// FlagLibcall (FTRT_CFG_LIBCALL) says the library functions the record's
// Libcalls names are traced where the module calls them (ftpatch enable
// --libcall).
const FlagLibcall uint32 = abi.ConfigLibcall

// LibcallsMax is the size of the record's libcalls field
// (FTRT_CFG_LIBCALLS_MAX): a list of at most LibcallsMax-1 bytes.
const LibcallsMax = abi.LibcallsMax

// configSize is sizeof(struct ftrt_config): the record's size field must
// say exactly this. A runtime with a larger record is newer than this
// ftpatch, one with a smaller record older; either way ftpatch would not
// know what it writes, so it refuses.
const configSize = abi.ConfigSize

// TraceDirMax is the size of the record's trace_dir field
// (FTRT_CFG_TRACE_DIR_MAX): a recorded trace location is at most
// TraceDirMax-1 bytes, NUL-padded.
const TraceDirMax = abi.TraceDirMax

var configMagic = [8]byte([]byte(abi.ConfigMagic))

// A Config is the record as ftpatch reads and writes it. Its layout in
// the file, little-endian, as struct ftrt_config in runtime/src/abi.h
// (package abi gives each field's offset):
//
//	0  magic[8]   "ftrtcfg1"
//	8  size       u32, 1336
//	12 tracer     u32
//	16 flags      u32
//	20 reserved   u32, 0
//	24 sites      u64
//	32 enabled    u64
//	40 list_hash  u64
//	48 text_hash  u64
//	56 trace_dir  [256]byte, NUL-padded
//	312 libcalls  [1024]byte, NUL-padded
//
// The zero Config (tracer 0, no flags) is the record as linked: "not
// patched", the runtime does what the environment says.
type Config struct {
	Tracer   Tracer
	Flags    uint32
	Reserved uint32
	Sites    uint64 // table entries ftpatch wrote: non-zero, distinct; live and dead
	Enabled  uint64 // of which calls into the runtime
	ListHash uint64 // funclist.List.Hash of what was enabled; 0: no list
	TextHash uint64 // textHash of the file when it was patched
	// TraceDir is where the program writes its trace (ftpatch enable
	// --trace-dir): an absolute path the runtime checks at start, the
	// only place a setuid or setgid program traces to; "" for none.
	TraceDir string
	// Libcalls are the library functions whose calls the module traces
	// where it makes them (FlagLibcall), FTRACE_FILTER's syntax: the
	// names ftpatch enable --libcall chose, separated by commas.
	Libcalls string
}

// Patched reports whether ftpatch wrote every site.
func (c Config) Patched() bool { return c.Flags&FlagPatched != 0 }

// marshal lays the record out as the runtime reads it.
func (c Config) marshal() []byte {
	b := make([]byte, configSize)
	copy(b[abi.CfgMagicOff:], configMagic[:])
	le := binary.LittleEndian
	le.PutUint32(b[abi.CfgSizeOff:], configSize)
	le.PutUint32(b[abi.CfgTracerOff:], uint32(c.Tracer))
	le.PutUint32(b[abi.CfgFlagsOff:], c.Flags)
	le.PutUint32(b[abi.CfgReservedOff:], c.Reserved)
	le.PutUint64(b[abi.CfgSitesOff:], c.Sites)
	le.PutUint64(b[abi.CfgEnabledOff:], c.Enabled)
	le.PutUint64(b[abi.CfgListHashOff:], c.ListHash)
	le.PutUint64(b[abi.CfgTextHashOff:], c.TextHash)
	copy(b[abi.CfgTraceDirOff:], c.TraceDir) // checked by CheckTraceDir: shorter than the field, so NUL-terminated
	copy(b[abi.CfgLibcallsOff:], c.Libcalls) // checked by Plan: shorter than the field
	return b
}

// parseConfig reads a record, checking its magic and size.
func parseConfig(b []byte) (Config, error) {
	if len(b) != configSize {
		return Config{}, fmt.Errorf("%w: section %s is %d bytes, want one %d-byte record (two runtimes linked?)", ErrConfig, ConfigSection, len(b), configSize)
	}
	if magic := b[abi.CfgMagicOff:][:len(configMagic)]; !bytes.Equal(magic, configMagic[:]) {
		return Config{}, fmt.Errorf("%w: magic % x, want %q", ErrConfig, magic, configMagic[:])
	}
	le := binary.LittleEndian
	if n := le.Uint32(b[abi.CfgSizeOff:]); n != configSize {
		return Config{}, fmt.Errorf("%w: record of %d bytes, this ftpatch writes %d: use the ftpatch whose runtime is linked", ErrConfig, n, configSize)
	}
	dir, err := padded(b[abi.CfgTraceDirOff:][:TraceDirMax], "trace_dir")
	if err != nil {
		return Config{}, err
	}
	libcalls, err := padded(b[abi.CfgLibcallsOff:][:LibcallsMax], "libcalls")
	if err != nil {
		return Config{}, err
	}
	return Config{
		Tracer: Tracer(le.Uint32(b[abi.CfgTracerOff:])), Flags: le.Uint32(b[abi.CfgFlagsOff:]), Reserved: le.Uint32(b[abi.CfgReservedOff:]),
		Sites: le.Uint64(b[abi.CfgSitesOff:]), Enabled: le.Uint64(b[abi.CfgEnabledOff:]),
		ListHash: le.Uint64(b[abi.CfgListHashOff:]), TextHash: le.Uint64(b[abi.CfgTextHashOff:]),
		TraceDir: dir, Libcalls: libcalls,
	}, nil
}

// padded reads a NUL-terminated, NUL-padded text field of the record.
func padded(f []byte, name string) (string, error) {
	end := bytes.IndexByte(f, 0)
	if end < 0 || bytes.ContainsFunc(f[end:], func(r rune) bool { return r != 0 }) {
		return "", fmt.Errorf("%w: %s is not a NUL-terminated text padded with NULs", ErrConfig, name)
	}
	return string(f[:end]), nil
}

// CheckTraceDir says whether dir can be recorded as a program's trace
// location: an absolute, clean path (no "." or ".." component, no
// trailing slash, no repeated slash), not "/", shorter than the record's
// field. The runtime re-checks the directories on it when the program
// starts (runtime/src/record/dir.c): that is where ownership and
// symbolic links are judged, on the machine the program runs on.
func CheckTraceDir(dir string) error {
	switch {
	case !strings.HasPrefix(dir, "/"):
		return fmt.Errorf("%w: %q is not an absolute path", ErrTraceDir, dir)
	case dir == "/":
		return fmt.Errorf("%w: %q: name a directory to make, not the root", ErrTraceDir, dir)
	case path.Clean(dir) != dir:
		return fmt.Errorf("%w: %q is not a clean path (want %q)", ErrTraceDir, dir, path.Clean(dir))
	case len(dir) >= TraceDirMax:
		return fmt.Errorf("%w: %q is %d bytes, at most %d fit the config record", ErrTraceDir, dir, len(dir), TraceDirMax-1)
	case strings.IndexByte(dir, 0) >= 0:
		return fmt.Errorf("%w: %q holds a NUL byte", ErrTraceDir, dir)
	}
	return nil
}

// findConfig locates the record: the section's file offset and contents.
func findConfig(f *elfx.File) (elfx.Off, Config, error) {
	s := f.Section(ConfigSection)
	if s == nil {
		return 0, Config{}, fmt.Errorf("%w: no %s section", ErrNoRuntime, ConfigSection)
	}
	if s.Type != elf.SHT_PROGBITS {
		return 0, Config{}, fmt.Errorf("%w: section %s has type %v, want PROGBITS", ErrConfig, ConfigSection, s.Type)
	}
	c, err := parseConfig(f.SectionData(s))
	return s.Off, c, err
}
