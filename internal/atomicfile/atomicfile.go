package atomicfile

import (
	"os"
	"path/filepath"
)

// File is a file being written under a temporary name in its destination's
// directory. Write to it, then Commit to put it in place or Abort to
// discard it.
type File struct {
	*os.File
	path string
}

// Create starts writing path. The directory must exist.
func Create(path string) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), TempPrefix(path)+"*")
	if err != nil {
		return nil, err
	}
	return &File{File: f, path: path}, nil
}

// TempPrefix returns the name prefix, in path's directory, of the temporary
// files that Create makes for path (to clean up after interrupted writes).
func TempPrefix(path string) string {
	return "." + filepath.Base(path) + ".tmp"
}

// Commit flushes the file to stable storage, makes it readable by all
// (mode 0644) and renames it over the destination, then syncs the
// directory. On error the temporary file is removed and the destination
// is left as it was.
func (f *File) Commit() error {
	tmp := f.Name()
	err := f.Sync()
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	// Persist the rename; failure to sync a directory is not fatal on
	// file systems that do not support it.
	if d, err := os.Open(filepath.Dir(f.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort discards the temporary file; the destination is left as it was.
func (f *File) Abort() {
	f.Close()
	os.Remove(f.Name())
}

// WriteFile writes data to path atomically (Create, Write, Commit).
func WriteFile(path string, data []byte) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}
