package elfx

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
)

// BuildID returns the hex GNU build-id of the file (its NT_GNU_BUILD_ID
// note), or "" when it has none: what a trace, a debug file and a plan
// are matched by.
func (f *File) BuildID() string {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		d := f.SectionData(s)
		for len(d) >= 12 {
			namesz, descsz, typ := binary.LittleEndian.Uint32(d), binary.LittleEndian.Uint32(d[4:]), binary.LittleEndian.Uint32(d[8:])
			name := 12 + (uint64(namesz)+3)&^3
			end := name + (uint64(descsz)+3)&^3
			if name+uint64(descsz) > uint64(len(d)) {
				break
			}
			if typ == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && string(d[12:15]) == "GNU" {
				return hex.EncodeToString(d[name : name+uint64(descsz)])
			}
			if end > uint64(len(d)) {
				break
			}
			d = d[end:]
		}
	}
	return ""
}

// DebugRoot is where a distribution installs debug files apart from the
// files they describe (Debian's -dbgsym packages); tests point it
// elsewhere.
var DebugRoot = "/usr/lib/debug"

// DebugPath is where the debug file of the file with build-id id lies:
// DebugRoot/.build-id/NN/REST.debug; "" for an id too short to be one.
func DebugPath(id string) string {
	if len(id) < 3 {
		return ""
	}
	return filepath.Join(DebugRoot, ".build-id", id[:2], id[2:]+".debug")
}

// AArch64BTI reports whether the file is marked for BTI
// (GNU_PROPERTY_AARCH64_FEATURE_1_AND with its BTI bit, in
// .note.gnu.property): the loader then maps its code guarded, so that an
// indirect branch must land on a landing pad (bti, or a paciasp or
// pacibsp, which are ones too).
func (f *File) AArch64BTI() bool {
	const (
		ntGNUPropertyType0 = 5
		featureAnd         = 0xc0000000
		bti                = 1
	)
	s := f.Section(".note.gnu.property")
	if s == nil {
		return false
	}
	d := f.SectionData(s)
	for len(d) >= 12 {
		namesz, descsz, typ := le.Uint32(d), le.Uint32(d[4:]), le.Uint32(d[8:])
		name := 12 + (uint64(namesz)+3)&^3
		end := name + (uint64(descsz)+7)&^7
		if name+uint64(descsz) > uint64(len(d)) {
			return false
		}
		if typ == ntGNUPropertyType0 && namesz == 4 && string(d[12:15]) == "GNU" {
			p := d[name : name+uint64(descsz)]
			for len(p) >= 8 {
				pt, sz := le.Uint32(p), le.Uint32(p[4:])
				if uint64(sz)+8 > uint64(len(p)) {
					break
				}
				if pt == featureAnd && sz >= 4 && le.Uint32(p[8:])&bti != 0 {
					return true
				}
				p = p[min(uint64(len(p)), 8+(uint64(sz)+7)&^7):]
			}
		}
		if end > uint64(len(d)) {
			return false
		}
		d = d[end:]
	}
	return false
}
