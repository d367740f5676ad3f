package vfs

// Mapper is implemented by a file system that can map a file into memory
// shared with the kernel's page cache (OS on Linux). A store into the
// mapping is in the page cache the moment it is made, with no system call:
// it survives the death of the process (SIGKILL, a panic) but not a power
// cut or a crash of the operating system, unless the file is synced.
//
// What the mapping held when the process died is readable through the file
// only while the machine has not restarted; Epoch tells the two apart.
type Mapper interface {
	// MapShared maps the whole named file, which must exist and be size
	// bytes long, for reading and writing.
	MapShared(name string, size int64) (Mapping, error)
	// Epoch returns a token that changes whenever unsynced data in the
	// page cache may have been lost: the kernel's boot id. Data stored
	// into a mapping under one epoch and read back under the same one is
	// exactly what was stored.
	Epoch() (string, error)
}

// Mapping is a file mapped with Mapper.MapShared.
type Mapping interface {
	// Bytes returns the mapped memory; it is valid until Close.
	Bytes() []byte
	// Close unmaps the file; the data stored stays in the file.
	Close() error
}
