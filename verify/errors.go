package verify

import "errors"

// ErrNotRoot is returned by Root when the path is not a directory that can
// be listed.
var ErrNotRoot = errors.New("verify: not a readable rlrec ROOT directory")
