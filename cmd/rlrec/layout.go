package main

import (
	"flag"
	"fmt"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
)

// layoutValue is the --layout flag of the recording commands: the steps
// layout of a new ROOT; empty keeps an existing ROOT's.
type layoutValue struct{ l hive.Layout }

func (v *layoutValue) String() string { return string(v.l) }

func (v *layoutValue) Set(s string) error {
	l, err := hive.ParseLayout(s)
	if err != nil {
		return fmt.Errorf("want episode (one partition per episode) or session (episodes packed per recording)")
	}
	v.l = l
	return nil
}

// bindLayout registers --layout on fs.
func bindLayout(fs *flag.FlagSet, v *layoutValue) {
	fs.Var(v, "layout", "steps layout of a new ROOT: episode (a partition per episode, the default) or session (whole episodes packed into files per recording, for short episodes); an existing ROOT keeps its own")
}

// options are the recorder options the flag asks for.
func (v *layoutValue) options() []recorder.Option {
	if v.l == "" {
		return nil
	}
	return []recorder.Option{recorder.WithLayout(v.l)}
}
