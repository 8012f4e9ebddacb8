package srcline

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"

	"ftpatch/elfx"
)

// maxDebugSize bounds what a compressed section may claim to hold once
// decompressed: a hostile header must not make us allocate gigabytes.
// (A 200,000-function program's .debug_line is a few megabytes.)
const maxDebugSize = 1 << 30

// maxZlibRatio bounds zlib's compression ratio (deflate's best is about
// 1032:1), so a stated size beyond it is a lie told before any is read.
const maxZlibRatio = 1100

// chdrSize is the size of an Elf64_Chdr, the header of an SHF_COMPRESSED
// section: ch_type, ch_reserved (4 bytes each), ch_size, ch_addralign.
const chdrSize = 24

// section returns the contents of .debug_<name>, decompressed, and the
// name it was found under; nil contents when there is no such section or
// when its compression is one this reader lacks (noted on t).
func (t *Table) section(f *elfx.File, name string) ([]byte, string, error) {
	if s := f.Section(".debug_" + name); s != nil {
		data := f.SectionData(s)
		if s.Type == elf.SHT_NOBITS {
			return nil, s.Name, nil // kept as a header only: nothing to read
		}
		if s.Flags&elf.SHF_COMPRESSED == 0 {
			return data, s.Name, nil
		}
		if len(data) < chdrSize {
			return nil, s.Name, fmt.Errorf("section %q: compressed, but %d bytes is shorter than the %d-byte compression header", s.Name, len(data), chdrSize)
		}
		typ := elf.CompressionType(binary.LittleEndian.Uint32(data))
		size := binary.LittleEndian.Uint64(data[8:])
		switch typ {
		case elf.COMPRESS_ZLIB:
		case elf.COMPRESS_ZSTD:
			t.Notes = append(t.Notes, fmt.Sprintf("section %q is compressed with zstd, which ftpatch does not decompress: no source lines (build with -gz=zlib or without -gz)", s.Name))
			return nil, s.Name, nil
		default:
			t.Notes = append(t.Notes, fmt.Sprintf("section %q is compressed with unknown method %d: no source lines", s.Name, uint32(typ)))
			return nil, s.Name, nil
		}
		out, err := inflate(data[chdrSize:], size)
		if err != nil {
			return nil, s.Name, fmt.Errorf("section %q: %w", s.Name, err)
		}
		return out, s.Name, nil
	}
	// GNU's older form (-gz=zlib-gnu): .zdebug_<name>, holding "ZLIB", the
	// size as 8 big-endian bytes, then the zlib stream.
	if s := f.Section(".zdebug_" + name); s != nil {
		data := f.SectionData(s)
		if len(data) < 12 || string(data[:4]) != "ZLIB" {
			return nil, s.Name, fmt.Errorf("section %q: does not start with \"ZLIB\" and a size", s.Name)
		}
		out, err := inflate(data[12:], binary.BigEndian.Uint64(data[4:]))
		if err != nil {
			return nil, s.Name, fmt.Errorf("section %q: %w", s.Name, err)
		}
		return out, s.Name, nil
	}
	return nil, "", nil
}

// inflate decompresses a zlib stream that must hold exactly size bytes.
func inflate(z []byte, size uint64) ([]byte, error) {
	if size > maxDebugSize {
		return nil, fmt.Errorf("compressed contents claim %d bytes, more than the %d this reader accepts", size, maxDebugSize)
	}
	if size > uint64(len(z))*maxZlibRatio+maxZlibRatio {
		return nil, fmt.Errorf("the %d compressed bytes claim to hold %d: more than zlib can encode in them", len(z), size)
	}
	zr, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err // "zlib: ..."
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("zlib: decompressing the %d bytes the header states: %w", size, err)
	}
	var extra [1]byte
	if n, _ := zr.Read(extra[:]); n > 0 {
		return nil, fmt.Errorf("zlib: more than the %d bytes the header states", size)
	}
	return out, nil
}
