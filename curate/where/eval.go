package where

import (
	"cmp"
	"math"
	"strings"

	"github.com/rlrec/rlrec/dataset"
)

// truth is a three-valued truth value.
type truth int8

const (
	tFalse truth = iota
	tTrue
	tUnknown
)

func truthOf(b bool) truth {
	if b {
		return tTrue
	}
	return tFalse
}

type node interface {
	eval(e *dataset.Episode) truth
	write(b *strings.Builder)
}

// Match reports whether the filter is TRUE for an episode (FALSE and
// unknown both leave it out).
func (f *Filter) Match(e *dataset.Episode) bool { return f.root.eval(e) == tTrue }

type binNode struct {
	or   bool
	l, r node
}

func (n *binNode) eval(e *dataset.Episode) truth {
	a := n.l.eval(e)
	if n.or {
		if a == tTrue {
			return tTrue
		}
		b := n.r.eval(e)
		switch {
		case b == tTrue:
			return tTrue
		case a == tFalse && b == tFalse:
			return tFalse
		}
		return tUnknown
	}
	if a == tFalse {
		return tFalse
	}
	b := n.r.eval(e)
	switch {
	case b == tFalse:
		return tFalse
	case a == tTrue && b == tTrue:
		return tTrue
	}
	return tUnknown
}

func (n *binNode) write(b *strings.Builder) {
	writeOperand(b, n.l)
	if n.or {
		b.WriteString(" OR ")
	} else {
		b.WriteString(" AND ")
	}
	writeOperand(b, n.r)
}

// writeOperand writes an operand of AND, OR or NOT, in parentheses unless
// it is a predicate.
func writeOperand(b *strings.Builder, n node) {
	switch n.(type) {
	case *binNode, *notNode:
		b.WriteByte('(')
		n.write(b)
		b.WriteByte(')')
	default:
		n.write(b)
	}
}

type notNode struct{ x node }

func (n *notNode) eval(e *dataset.Episode) truth {
	switch n.x.eval(e) {
	case tTrue:
		return tFalse
	case tFalse:
		return tTrue
	}
	return tUnknown
}

func (n *notNode) write(b *strings.Builder) {
	b.WriteString("NOT ")
	writeOperand(b, n.x)
}

type cmpNode struct {
	col  *column
	op   string
	lit  literal
	bare bool // a bool column standing alone
}

func (n *cmpNode) eval(e *dataset.Episode) truth {
	v := n.col.get(e)
	if v.null {
		return tUnknown
	}
	c := compare(n.col.typ, v, n.lit)
	switch n.op {
	case "=":
		return truthOf(c == 0)
	case "!=":
		return truthOf(c != 0)
	case "<":
		return truthOf(c < 0)
	case "<=":
		return truthOf(c <= 0)
	case ">":
		return truthOf(c > 0)
	case ">=":
		return truthOf(c >= 0)
	}
	return tUnknown
}

func (n *cmpNode) write(b *strings.Builder) {
	b.WriteString(quoteIdent(n.col.name))
	if n.bare {
		return
	}
	b.WriteString(" " + n.op + " " + n.lit.raw)
}

// compare orders a non-null column value against a literal of its type.
func compare(t Type, v value, lit literal) int {
	switch t {
	case TypeString:
		return strings.Compare(v.s, lit.v.s)
	case TypeInt, TypeTimestamp:
		if lit.isFloat {
			return compareFloat(float64(v.i), lit.v.f)
		}
		return cmp.Compare(v.i, lit.v.i)
	case TypeFloat:
		return compareFloat(v.f, lit.v.f)
	case TypeBool:
		switch {
		case v.b == lit.v.b:
			return 0
		case !v.b:
			return -1
		}
		return 1
	}
	return 0
}

// compareFloat orders floats as DuckDB does: NaN equals NaN and is above
// every other value.
func compareFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return cmp.Compare(a, b)
}

type nullNode struct {
	col *column
	not bool
}

func (n *nullNode) eval(e *dataset.Episode) truth {
	return truthOf(n.col.get(e).null != n.not)
}

func (n *nullNode) write(b *strings.Builder) {
	b.WriteString(quoteIdent(n.col.name))
	if n.not {
		b.WriteString(" IS NOT NULL")
	} else {
		b.WriteString(" IS NULL")
	}
}

type inNode struct {
	col  *column
	not  bool
	lits []literal
}

func (n *inNode) eval(e *dataset.Episode) truth {
	v := n.col.get(e)
	if v.null {
		return tUnknown
	}
	found := false
	for _, l := range n.lits {
		if compare(n.col.typ, v, l) == 0 {
			found = true
			break
		}
	}
	return truthOf(found != n.not)
}

func (n *inNode) write(b *strings.Builder) {
	b.WriteString(quoteIdent(n.col.name))
	if n.not {
		b.WriteString(" NOT IN (")
	} else {
		b.WriteString(" IN (")
	}
	for i, l := range n.lits {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(l.raw)
	}
	b.WriteByte(')')
}
