package serve

import "errors"

// Sentinel errors of package serve; match them with errors.Is.
var (
	// ErrInsecureListen is returned by CheckListen for an address that is
	// not on the loopback interface when no token is set: anyone who can
	// reach it could write into the ROOT.
	ErrInsecureListen = errors.New("serve: non-loopback address without a token")
	// ErrBadToken is returned by ReadToken for a token file that is empty
	// or holds more than one line.
	ErrBadToken = errors.New("serve: unusable token file")
	// ErrDraining is the status of a stream the server ended because it is
	// shutting down; the client resends what was not acknowledged to the
	// next server.
	ErrDraining = errors.New("serve: server is draining")
)
