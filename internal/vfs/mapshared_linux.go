//go:build linux

package vfs

import (
	"bytes"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func (osFS) MapShared(name string, size int64) (Mapping, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() != size {
		return nil, fmt.Errorf("map %s: file has %d bytes, want %d", name, st.Size(), size)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", name, err)
	}
	return &osMapping{b: b}, nil
}

func (osFS) Epoch() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read the kernel's boot id: %w", err)
	}
	id := string(bytes.TrimSpace(b))
	if id == "" {
		return "", fmt.Errorf("read the kernel's boot id: empty")
	}
	return id, nil
}

type osMapping struct{ b []byte }

func (m *osMapping) Bytes() []byte { return m.b }

func (m *osMapping) Close() error {
	if m.b == nil {
		return nil
	}
	err := unix.Munmap(m.b)
	m.b = nil
	return err
}
