package client

import "errors"

// Sentinel errors of package client; match them with errors.Is.
var (
	// ErrClosed is returned by a hook, Flush or Close called after Close.
	ErrClosed = errors.New("client: closed")
	// ErrRefused is wrapped by Flush when the server refused events
	// handed over since the last Flush; the error names the first.
	ErrRefused = errors.New("client: events refused by the server")
	// ErrEventTooLarge is returned by a hook whose event encodes to more
	// than the largest message the server takes (WithMaxMessageBytes); it
	// is not sent. It is also wrapped by every call once the server
	// refused a batch as larger than its own maximum (its
	// --max-message below the client's WithMaxMessageBytes): the
	// client stops instead of resending the batch forever.
	ErrEventTooLarge = errors.New("client: event too large")
	// ErrUnauthenticated is wrapped by every call once the server refused
	// the client's token: give the right one (WithToken).
	ErrUnauthenticated = errors.New("client: token refused by the server")
	// ErrServerTLS is returned by Dial when the server speaks TLS and the
	// client was not given WithTLS.
	ErrServerTLS = errors.New("client: the server speaks TLS")
	// ErrServerPlaintext is returned by Dial when the client was given
	// WithTLS and the server does not speak TLS.
	ErrServerPlaintext = errors.New("client: the server does not speak TLS")
	// ErrUntrusted is returned by Dial when the server's certificate is
	// not trusted by the client's WithTLS configuration.
	ErrUntrusted = errors.New("client: the server's certificate is not trusted")
)
