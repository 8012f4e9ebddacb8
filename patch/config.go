package patch

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"

	"ftpatch/elfx"
)

// ConfigSection is the section holding the runtime's config record
// (runtime/src/config.c).
const ConfigSection = ".ftrt_config"

// FlagPatched (FTRT_CFG_PATCHED) says ftpatch wrote every site: each is a
// NOP or a call to the trampoline its kind calls, so the runtime's
// load-time pass only checks them.
const FlagPatched uint32 = 1

// FlagNoTable (FTRT_CFG_NOTABLE) says the file has no site table: ftpatch
// found its sites by decoding function entries, so the runtime has
// nothing to check them against and starts the recorded tracer on the
// record's word (ftpatch verify is where such a file is checked).
const FlagNoTable uint32 = 2

// configSize is sizeof(struct ftrt_config): the record's size field must
// say exactly this. A runtime with a larger record is newer than this
// ftpatch, one with a smaller record older; either way ftpatch would not
// know what it writes, so it refuses.
const configSize = 56

var configMagic = [8]byte{'f', 't', 'r', 't', 'c', 'f', 'g', '1'}

// A Config is the record as ftpatch reads and writes it. Its layout in
// the file, little-endian, as struct ftrt_config in runtime/src/ftrt.h:
//
//	0  magic[8]   "ftrtcfg1"
//	8  size       u32, 56
//	12 tracer     u32
//	16 flags      u32
//	20 reserved   u32, 0
//	24 sites      u64
//	32 enabled    u64
//	40 list_hash  u64
//	48 text_hash  u64
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
}

// Patched reports whether ftpatch wrote every site.
func (c Config) Patched() bool { return c.Flags&FlagPatched != 0 }

// marshal lays the record out as the runtime reads it.
func (c Config) marshal() []byte {
	b := make([]byte, configSize)
	copy(b, configMagic[:])
	le := binary.LittleEndian
	le.PutUint32(b[8:], configSize)
	le.PutUint32(b[12:], uint32(c.Tracer))
	le.PutUint32(b[16:], c.Flags)
	le.PutUint32(b[20:], c.Reserved)
	le.PutUint64(b[24:], c.Sites)
	le.PutUint64(b[32:], c.Enabled)
	le.PutUint64(b[40:], c.ListHash)
	le.PutUint64(b[48:], c.TextHash)
	return b
}

// parseConfig reads a record, checking its magic and size.
func parseConfig(b []byte) (Config, error) {
	if len(b) != configSize {
		return Config{}, fmt.Errorf("%w: section %s is %d bytes, want one %d-byte record (two runtimes linked?)", ErrConfig, ConfigSection, len(b), configSize)
	}
	if !bytes.Equal(b[:8], configMagic[:]) {
		return Config{}, fmt.Errorf("%w: magic % x, want %q", ErrConfig, b[:8], configMagic[:])
	}
	le := binary.LittleEndian
	if n := le.Uint32(b[8:]); n != configSize {
		return Config{}, fmt.Errorf("%w: record of %d bytes, this ftpatch writes %d: use the ftpatch whose runtime is linked", ErrConfig, n, configSize)
	}
	return Config{
		Tracer: Tracer(le.Uint32(b[12:])), Flags: le.Uint32(b[16:]), Reserved: le.Uint32(b[20:]),
		Sites: le.Uint64(b[24:]), Enabled: le.Uint64(b[32:]), ListHash: le.Uint64(b[40:]), TextHash: le.Uint64(b[48:]),
	}, nil
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
