package logrec

import (
	"fmt"
	"time"

	"github.com/rlrec/rlrec/events"
	"google.golang.org/protobuf/encoding/protowire"
)

// Invalid is the body of a TypeInvalid record: a message of an ingested
// stream that was well-formed protobuf but no valid event. Only what names
// its recording, when it was recorded and why it was refused are kept;
// the recorder counts it as a problem of that recording.
type Invalid struct {
	SessionID string
	Route     events.RuntimeEnvContext
	// At is its recording time; the zero time is not written.
	At time.Time
	// Kind is the event type the message set, 0 when none this version
	// knows.
	Kind events.Kind
	// Detail says why it was refused.
	Detail string
}

// Invalid-event field numbers. Part of the on-disk format: do not change
// them.
const (
	invalidSession protowire.Number = 1 // bytes
	invalidRoute   protowire.Number = 2 // bytes: Route message
	invalidAt      protowire.Number = 3 // varint: Unix nanoseconds, not zigzag
	invalidKind    protowire.Number = 4 // varint, absent when 0
	invalidDetail  protowire.Number = 5 // bytes

	routeEnv   protowire.Number = 1 // bytes
	routeEnvC  protowire.Number = 2 // bytes
	routeModel protowire.Number = 3 // bytes
)

// AppendInvalid appends a TypeInvalid record of e, type byte first.
func AppendInvalid(dst []byte, e *Invalid) []byte {
	dst = append(dst, byte(TypeInvalid))
	dst = protowire.AppendTag(dst, invalidSession, protowire.BytesType)
	dst = protowire.AppendString(dst, e.SessionID)
	var route []byte
	for i, s := range []string{e.Route.EnvID, e.Route.EnvComponentID, e.Route.ModelComponentID} {
		if s != "" {
			route = protowire.AppendTag(route, routeEnv+protowire.Number(i), protowire.BytesType)
			route = protowire.AppendString(route, s)
		}
	}
	dst = protowire.AppendTag(dst, invalidRoute, protowire.BytesType)
	dst = protowire.AppendBytes(dst, route)
	if !e.At.IsZero() {
		dst = protowire.AppendTag(dst, invalidAt, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(e.At.UnixNano()))
	}
	if e.Kind != 0 {
		dst = protowire.AppendTag(dst, invalidKind, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(e.Kind))
	}
	dst = protowire.AppendTag(dst, invalidDetail, protowire.BytesType)
	return protowire.AppendString(dst, e.Detail)
}

// ParseInvalid decodes the body of a TypeInvalid record (after its type
// byte). Its time is in UTC.
func ParseInvalid(b []byte) (*Invalid, error) {
	e := &Invalid{}
	bad := func(what string) error { return fmt.Errorf("%w: %s", ErrInvalid, what) }
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, bad(protowire.ParseError(n).Error())
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && (num == invalidSession || num == invalidRoute || num == invalidDetail):
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, bad(protowire.ParseError(n).Error())
			}
			b = b[n:]
			switch num {
			case invalidSession:
				e.SessionID = string(v)
			case invalidRoute:
				if err := parseRoute(v, &e.Route); err != nil {
					return nil, bad(err.Error())
				}
			case invalidDetail:
				e.Detail = string(v)
			}
		case typ == protowire.VarintType && (num == invalidAt || num == invalidKind):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, bad(protowire.ParseError(n).Error())
			}
			b = b[n:]
			if num == invalidAt {
				e.At = time.Unix(0, int64(v)).UTC()
			} else {
				e.Kind = events.Kind(v)
			}
		default:
			return nil, bad(fmt.Sprintf("unexpected field %d", num))
		}
	}
	return e, nil
}

func parseRoute(b []byte, r *events.RuntimeEnvContext) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < routeEnv || num > routeModel {
			return fmt.Errorf("route: unexpected field %d", num)
		}
		v, m := protowire.ConsumeString(b[n:])
		if m < 0 {
			return fmt.Errorf("route: %v", protowire.ParseError(m))
		}
		b = b[n+m:]
		switch num {
		case routeEnv:
			r.EnvID = v
		case routeEnvC:
			r.EnvComponentID = v
		case routeModel:
			r.ModelComponentID = v
		}
	}
	return nil
}
