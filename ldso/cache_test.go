package ldso

import (
	"encoding/binary"
	"os"
	"path/filepath"
)

// writeCache writes entries as an ld.so.cache in the new format, for
// tests (the order given is the order written).
func writeCache(path string, entries []cacheEntry) error {
	le := binary.LittleEndian
	strs := []byte{}
	base := cacheHeader + len(entries)*entrySize
	add := func(s string) uint32 {
		off := uint32(base + len(strs))
		strs = append(append(strs, s...), 0)
		return off
	}
	b := make([]byte, base)
	copy(b, cacheMagic)
	le.PutUint32(b[20:], uint32(len(entries)))
	for i, e := range entries {
		w := b[cacheHeader+i*entrySize:]
		le.PutUint32(w[0:], uint32(e.flags))
		le.PutUint32(w[4:], add(e.key))
		le.PutUint32(w[8:], add(e.value))
		le.PutUint64(w[16:], e.hwcap)
	}
	le.PutUint32(b[24:], uint32(len(strs)))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, strs...), 0o644)
}
