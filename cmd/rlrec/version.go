package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

var cmdVersion = &Command{
	Name:      "version",
	UsageLine: "version",
	Short:     "print rlrec's version, source revision and Go version",
	Long: `Version prints the version of the rlrec module this binary was built from
(a release such as v1.2.0 for 'go install ...@v1.2.0', "(devel)" for a
build in a checkout), the source revision when the build recorded one
(with "modified" when the checkout had uncommitted changes), and the Go
version and platform it was built with. 'rlrec --version' does the same.

Example:

  rlrec version`,
	Run: runVersion,
}

func runVersion(_ context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	bi, ok := debug.ReadBuildInfo()
	return writeVersion(env.Stdout, bi, ok)
}

// writeVersion prints what the build info says of this binary: the
// module's version, the VCS revision and time, and the Go version.
func writeVersion(w io.Writer, bi *debug.BuildInfo, ok bool) error {
	version, module, goVersion := "(unknown)", "github.com/rlrec/rlrec", runtime.Version()
	var revision, vcsTime string
	modified := false
	if ok && bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.Main.Path != "" {
			module = bi.Main.Path
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				vcsTime = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	fmt.Fprintf(w, "rlrec %s\n", version)
	fmt.Fprintf(w, "  module:   %s\n", module)
	switch {
	case revision == "":
		fmt.Fprintf(w, "  revision: unknown (the build recorded none)\n")
	default:
		line := revision
		if vcsTime != "" {
			line += " (" + vcsTime + ")"
		}
		if modified {
			line += ", modified: built with uncommitted changes"
		}
		fmt.Fprintf(w, "  revision: %s\n", line)
	}
	_, err := fmt.Fprintf(w, "  go:       %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return err
}
