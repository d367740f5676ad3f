package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
)

// outFlag defines the output flag of a command that writes: -o and --out
// are one flag, spelled either way.
func outFlag(fs *flag.FlagSet, p *string, usage string) {
	fs.StringVar(p, "o", *p, usage)
	fs.StringVar(p, "out", *p, outAliasUsage)
}

// outAliasUsage is the help text of --out.
const outAliasUsage = "the same as -o"

// forceFlag defines --force, which lets a command replace an existing
// output file.
func forceFlag(fs *flag.FlagSet, p *bool) {
	fs.BoolVar(p, "force", false, "replace the output file when it exists")
}

// checkNewFile refuses an output file that exists, unless force: a
// command never overwrites a file the user did not ask it to replace.
// "-" (standard output) and devices such as /dev/null are always
// accepted.
func checkNewFile(path string, force bool) error {
	if path == "" || path == "-" || force {
		return nil
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("output %s: %v; check the path and its permissions", path, err)
	case info.IsDir():
		return fmt.Errorf("output %s is a directory; give a file name", path)
	case !info.Mode().IsRegular():
		return nil
	}
	return fmt.Errorf("%s exists; give --force to replace it, or choose another file", path)
}
