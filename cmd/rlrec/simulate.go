package main

import (
	"context"
	"errors"
)

// Placeholder until the command is built.
var cmdSimulate = &Command{
	Name:      "simulate",
	UsageLine: "simulate",
	Short:     "(not built yet)",
	Long:      "Not built yet.",
	Run: func(ctx context.Context, env *Env, args []string) error {
		return errors.New("not built yet")
	},
}
