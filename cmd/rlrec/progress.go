package main

import (
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressThrottle is the shortest time between two renderings unless
// Env.ProgressInterval says otherwise.
const progressThrottle = 100 * time.Millisecond

// progressInterval is the shortest time between two renderings on env's
// Stderr.
func progressInterval(env *Env) time.Duration {
	if env.ProgressInterval > 0 {
		return env.ProgressInterval
	}
	return progressThrottle
}

// bytesProgress returns a progress display of the bytes read, on
// env.Stderr: a bar when size is known (> 0), otherwise a spinner with the
// bytes read so far (a pipe). It returns nil when stderr is no terminal.
// Finish clears it.
func bytesProgress(env *Env, size int64, desc string) *progressbar.ProgressBar {
	if !env.IsTerminal {
		return nil
	}
	if size <= 0 {
		size = -1
	}
	return progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(env.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionUseIECUnits(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(20),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionThrottle(progressInterval(env)),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionClearOnFinish(),
	)
}

// countProgress returns a progress bar of n items (files), on env.Stderr,
// or nil when stderr is no terminal.
func countProgress(env *Env, n int, desc, items string) *progressbar.ProgressBar {
	if !env.IsTerminal {
		return nil
	}
	return progressbar.NewOptions(n,
		progressbar.OptionSetWriter(env.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(items),
		progressbar.OptionSetWidth(20),
		progressbar.OptionThrottle(progressInterval(env)),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionClearOnFinish(),
	)
}
