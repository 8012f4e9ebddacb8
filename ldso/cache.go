package ldso

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// The ld.so.cache format, as glibc's ldconfig writes it
// (sysdeps/generic/dl-cache.h). The file is the new format alone
// ("glibc-ld.so.cache1.1"), or, from older ldconfigs, the old format
// ("ld.so-1.7.0") followed by the new one at the next 8-byte boundary.
//
//	header (48 bytes)        entry (24 bytes)
//	  magic   "glibc-ld.so.cache"   flags     int32
//	  version "1.1"                 key       uint32  string offset: the name
//	  nlibs   uint32                value     uint32  string offset: the path
//	  len_strings uint32            osversion uint32
//	  flags   uint8, 3 padding      hwcap     uint64
//	  extension_offset uint32
//	  unused  3 x uint32
//
// String offsets count from the new format's header. Entries with a
// hwcap are the glibc-hwcaps subdirectories' copies, which this search
// leaves aside (see the package comment).
const (
	cacheMagic    = "glibc-ld.so.cache1.1"
	oldCacheMagic = "ld.so-1.7.0"
	cacheHeader   = 48
	entrySize     = 24
	oldHeader     = 16 // magic, padding, nlibs
	oldEntry      = 12 // flags, key, value

	flagELFLibc6 = 0x0003 // FLAG_ELF_LIBC6: a glibc library
)

// A cacheEntry is one library of ld.so.cache.
type cacheEntry struct {
	flags      int32
	key, value string // the name it is needed by; its path
	hwcap      uint64
}

// errCacheFormat: the ld.so.cache is not in a format this reads.
var errCacheFormat = errors.New("not an ld.so.cache in glibc's format")

// readCache reads the Env's cache: none when there is no file (the
// loader then goes on to the default directories) or when it cannot be
// read (a loader that cannot read it does the same).
func (s *search) readCache() []cacheEntry {
	p := s.env.Cache
	if p == "" {
		p = s.rooted("/etc/ld.so.cache")
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	entries, err := parseCache(data)
	if err != nil {
		return nil
	}
	return entries
}

// parseCache parses an ld.so.cache.
func parseCache(data []byte) ([]cacheEntry, error) {
	le := binary.LittleEndian
	if bytes.HasPrefix(data, []byte(oldCacheMagic)) {
		if len(data) < oldHeader {
			return nil, fmt.Errorf("%w: %d bytes, shorter than the old format's header", errCacheFormat, len(data))
		}
		n := uint64(le.Uint32(data[12:]))
		skip := (oldHeader + n*oldEntry + 7) &^ 7
		if skip > uint64(len(data)) {
			return nil, fmt.Errorf("%w: %d old-format entries run past the end of the %d-byte file", errCacheFormat, n, len(data))
		}
		data = data[skip:]
	}
	if !bytes.HasPrefix(data, []byte(cacheMagic)) || len(data) < cacheHeader {
		return nil, fmt.Errorf("%w: no %q header", errCacheFormat, cacheMagic)
	}
	n := uint64(le.Uint32(data[20:]))
	if n > uint64(len(data)-cacheHeader)/entrySize {
		return nil, fmt.Errorf("%w: %d entries run past the end of the %d-byte file", errCacheFormat, n, len(data))
	}
	str := func(off uint32) (string, error) {
		if uint64(off) >= uint64(len(data)) {
			return "", fmt.Errorf("%w: string offset %d past the end of the %d-byte file", errCacheFormat, off, len(data))
		}
		s, _, ok := bytes.Cut(data[off:], []byte{0})
		if !ok {
			return "", fmt.Errorf("%w: string at %d has no end", errCacheFormat, off)
		}
		return string(s), nil
	}
	out := make([]cacheEntry, 0, n)
	for i := range n {
		e := data[cacheHeader+i*entrySize:]
		key, err := str(le.Uint32(e[4:]))
		if err != nil {
			return nil, err
		}
		value, err := str(le.Uint32(e[8:]))
		if err != nil {
			return nil, err
		}
		out = append(out, cacheEntry{flags: int32(le.Uint32(e[0:])), key: key, value: value, hwcap: le.Uint64(e[16:])})
	}
	return out, nil
}
