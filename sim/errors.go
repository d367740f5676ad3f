package sim

import "errors"

var (
	// ErrUnknownEnv is returned when Config.Env names no built-in
	// environment; Envs lists the valid names.
	ErrUnknownEnv = errors.New("sim: unknown environment")
	// ErrConfig is returned when a Config value is out of range; the
	// wrapping error names the field.
	ErrConfig = errors.New("sim: invalid config")
	// ErrDuplicateSession is returned by RunSessions when two configs name
	// the same recording: the same session id and env id.
	ErrDuplicateSession = errors.New("sim: duplicate session id")
	// ErrHook is returned (wrapped, with the first hook error) when one or
	// more hook calls returned an error. Hook errors do not stop a session,
	// as in the runtime; they are reported when it ends.
	ErrHook = errors.New("sim: hook returned an error")
)
