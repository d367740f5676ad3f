package hive

import "errors"

// ErrBadEscape is returned by Unescape for a '%' not followed by two hex
// digits.
var ErrBadEscape = errors.New("hive: malformed percent escape")
