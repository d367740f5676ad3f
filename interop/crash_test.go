package interop

import "errors"

const crashChildEnv = "RLREC_INTEROP_CRASH_ROOT"

func crashChild(root string) error { return errors.New("not yet") }
