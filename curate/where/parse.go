package where

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every error Parse returns.
var ErrSyntax = errors.New("where: bad filter")

// MaxDepth bounds the nesting of parentheses and NOT.
const MaxDepth = 64

// Error is a filter that does not parse or type-check: Pos is the byte
// offset in the filter text where the problem is.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("filter: at byte %d: %s", e.Pos, e.Msg) }

func (e *Error) Unwrap() error { return ErrSyntax }

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tString
	tNumber
	tOp
	tLParen
	tRParen
	tComma
	tKeyword
)

type token struct {
	kind tokKind
	pos  int
	text string // ident: the name (unquoted); string: the value; keyword: upper case; op: the operator
	raw  string // the source text
}

var keywords = map[string]bool{"AND": true, "OR": true, "NOT": true, "IS": true, "NULL": true, "IN": true, "TRUE": true, "FALSE": true}

func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			toks = append(toks, token{kind: tLParen, pos: i, raw: "("})
			i++
		case c == ')':
			toks = append(toks, token{kind: tRParen, pos: i, raw: ")"})
			i++
		case c == ',':
			toks = append(toks, token{kind: tComma, pos: i, raw: ","})
			i++
		case c == '=' || c == '<' || c == '>' || c == '!':
			op := string(c)
			if i+1 < len(src) {
				two := src[i : i+2]
				switch two {
				case "==", "!=", "<>", "<=", ">=":
					op = two
				}
			}
			if op == "!" {
				return nil, &Error{i, "'!' must be followed by '=' (write != or NOT)"}
			}
			if op == "==" {
				toks = append(toks, token{kind: tOp, pos: i, text: "=", raw: op})
			} else if op == "<>" {
				toks = append(toks, token{kind: tOp, pos: i, text: "!=", raw: op})
			} else {
				toks = append(toks, token{kind: tOp, pos: i, text: op, raw: op})
			}
			i += len(op)
		case c == '\'' || c == '"':
			s, n, ok := quoted(src[i:], c)
			if !ok {
				what := "string"
				if c == '"' {
					what = "quoted column name"
				}
				return nil, &Error{i, fmt.Sprintf("unterminated %s (a %c inside one is written %c%c)", what, c, c, c)}
			}
			if !utf8.ValidString(s) {
				return nil, &Error{i, "invalid UTF-8"}
			}
			k := tString
			if c == '"' {
				k = tIdent
				if s == "" {
					return nil, &Error{i, "empty quoted column name"}
				}
				s = strings.ToLower(s)
			}
			toks = append(toks, token{kind: k, pos: i, text: s, raw: src[i : i+n]})
			i += n
		case isDigit(c) || c == '.' || ((c == '-' || c == '+') && i+1 < len(src) && (isDigit(src[i+1]) || src[i+1] == '.')):
			n := numberLen(src[i:])
			if n == 0 {
				return nil, &Error{i, fmt.Sprintf("bad number %q", src[i:min(len(src), i+12)])}
			}
			if j := i + n; j < len(src) && isIdentByte(src[j]) {
				return nil, &Error{i, fmt.Sprintf("bad number %q", src[i:j+1])}
			}
			toks = append(toks, token{kind: tNumber, pos: i, text: src[i : i+n], raw: src[i : i+n]})
			i += n
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			word := src[i:j]
			if up := strings.ToUpper(word); keywords[up] {
				toks = append(toks, token{kind: tKeyword, pos: i, text: up, raw: word})
			} else {
				toks = append(toks, token{kind: tIdent, pos: i, text: strings.ToLower(word), raw: word})
			}
			i = j
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, &Error{i, fmt.Sprintf("unexpected character %q", r)}
		}
	}
	return append(toks, token{kind: tEOF, pos: len(src)}), nil
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isIdentByte(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// quoted reads a string quoted by q at the start of s, with qq for q; it
// returns the value and the length of its source.
func quoted(s string, q byte) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", 0, false
}

// numberLen returns the length of the number at the start of s (0: none).
func numberLen(s string) int {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		k := j
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k == j {
			return 0
		}
		i = k
	}
	return i
}

// Filter is a parsed, type-checked filter. It is immutable and safe for
// concurrent use.
type Filter struct {
	src  string
	root node
}

// Parse parses and type-checks a filter. Errors are *Error values
// wrapping ErrSyntax.
func Parse(src string) (*Filter, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	if p.peek().kind == tEOF {
		return nil, &Error{0, "empty filter"}
	}
	n, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, &Error{t.pos, fmt.Sprintf("unexpected %s after a complete filter (join conditions with AND or OR)", describe(t))}
	}
	return &Filter{src: src, root: n}, nil
}

// String returns the filter in canonical form: keywords in upper case,
// every AND, OR and NOT operand that is not a predicate in parentheses.
// Parsing it gives an equal filter.
func (f *Filter) String() string {
	var b strings.Builder
	f.root.write(&b)
	return b.String()
}

// Source returns the text the filter was parsed from.
func (f *Filter) Source() string { return f.src }

type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) keyword(k string) bool {
	if t := p.peek(); t.kind == tKeyword && t.text == k {
		p.i++
		return true
	}
	return false
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of filter"
	case tString:
		return "string " + t.raw
	case tIdent:
		return "column " + t.raw
	case tNumber:
		return "number " + t.raw
	}
	return strconv.Quote(t.raw)
}

func (p *parser) or(depth int) (node, error) {
	l, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for p.keyword("OR") {
		r, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		l = &binNode{or: true, l: l, r: r}
	}
	return l, nil
}

func (p *parser) and(depth int) (node, error) {
	l, err := p.not(depth)
	if err != nil {
		return nil, err
	}
	for p.keyword("AND") {
		r, err := p.not(depth)
		if err != nil {
			return nil, err
		}
		l = &binNode{l: l, r: r}
	}
	return l, nil
}

func (p *parser) not(depth int) (node, error) {
	t := p.peek()
	if depth >= MaxDepth {
		return nil, &Error{t.pos, fmt.Sprintf("nested more than %d levels deep", MaxDepth)}
	}
	if p.keyword("NOT") {
		x, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		return &notNode{x: x}, nil
	}
	if t.kind == tLParen {
		p.next()
		x, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tRParen {
			return nil, &Error{c.pos, fmt.Sprintf("want ) to close the ( at byte %d, got %s", t.pos, describe(c))}
		}
		return x, nil
	}
	return p.predicate()
}

func (p *parser) predicate() (node, error) {
	t := p.next()
	if t.kind != tIdent {
		if t.kind == tString || t.kind == tNumber || (t.kind == tKeyword && (t.text == "TRUE" || t.text == "FALSE" || t.text == "NULL")) {
			return nil, &Error{t.pos, fmt.Sprintf("want a column, got %s: a column stands on the left of its comparison", describe(t))}
		}
		return nil, &Error{t.pos, fmt.Sprintf("want a column, NOT or (, got %s", describe(t))}
	}
	col := columns[t.text]
	if col == nil {
		return nil, &Error{t.pos, fmt.Sprintf("unknown column %q; the episodes columns a filter may name: %s", t.raw, columnNames())}
	}
	op := p.peek()
	switch {
	case op.kind == tOp:
		p.next()
		lt := p.next()
		lit, err := literalFor(col, lt, op.text)
		if err != nil {
			return nil, err
		}
		if col.typ == TypeBool && op.text != "=" && op.text != "!=" {
			return nil, &Error{op.pos, fmt.Sprintf("column %s is bool: compare it with = or != only", col.name)}
		}
		return &cmpNode{col: col, op: op.text, lit: lit}, nil
	case op.kind == tKeyword && op.text == "IS":
		p.next()
		neg := p.keyword("NOT")
		if n := p.next(); n.kind != tKeyword || n.text != "NULL" {
			return nil, &Error{n.pos, fmt.Sprintf("want NULL after IS, got %s", describe(n))}
		}
		return &nullNode{col: col, not: neg}, nil
	case op.kind == tKeyword && (op.text == "IN" || op.text == "NOT"):
		p.next()
		neg := false
		if op.text == "NOT" {
			neg = true
			if in := p.next(); in.kind != tKeyword || in.text != "IN" {
				return nil, &Error{in.pos, fmt.Sprintf("want IN after %s NOT, got %s", col.name, describe(in))}
			}
		}
		if lp := p.next(); lp.kind != tLParen {
			return nil, &Error{lp.pos, fmt.Sprintf("want ( after IN, got %s", describe(lp))}
		}
		in := &inNode{col: col, not: neg}
		for {
			lt := p.next()
			lit, err := literalFor(col, lt, "IN")
			if err != nil {
				return nil, err
			}
			in.lits = append(in.lits, lit)
			sep := p.next()
			if sep.kind == tRParen {
				break
			}
			if sep.kind != tComma {
				return nil, &Error{sep.pos, fmt.Sprintf("want , or ) in the IN list, got %s", describe(sep))}
			}
		}
		return in, nil
	}
	if col.typ == TypeBool {
		return &cmpNode{col: col, op: "=", lit: literal{v: value{b: true}, raw: "TRUE"}, bare: true}, nil
	}
	return nil, &Error{op.pos, fmt.Sprintf("want a comparison (= != < <= > >=), IS [NOT] NULL or IN after column %s, got %s", col.name, describe(op))}
}

// literal is a literal converted to its column's type.
type literal struct {
	v value
	// isFloat: a number literal compared as float64 against an integer
	// column (it has a fraction or does not fit int64).
	isFloat bool
	raw     string // canonical source form
}

var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02",
}

func literalFor(col *column, t token, op string) (literal, error) {
	bad := func(want string) error {
		return &Error{t.pos, fmt.Sprintf("column %s is %s: compare it with %s, got %s", col.name, col.typ, want, describe(t))}
	}
	if t.kind == tKeyword && t.text == "NULL" {
		if op == "IN" {
			return literal{}, &Error{t.pos, "NULL in an IN list never matches; use IS NULL"}
		}
		return literal{}, &Error{t.pos, fmt.Sprintf("a comparison with NULL is never true; write %s IS NULL or %s IS NOT NULL", col.name, col.name)}
	}
	switch col.typ {
	case TypeString:
		if t.kind != tString {
			return literal{}, bad("a 'string'")
		}
		return literal{v: value{s: t.text}, raw: quote(t.text)}, nil
	case TypeInt, TypeFloat:
		if t.kind != tNumber {
			return literal{}, bad("a number")
		}
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return literal{}, &Error{t.pos, fmt.Sprintf("bad number %q", t.raw)}
		}
		if col.typ == TypeFloat {
			return literal{v: value{f: f}, raw: formatFloat(f)}, nil
		}
		if !strings.ContainsAny(t.text, ".eE") {
			if i, err := strconv.ParseInt(t.text, 10, 64); err == nil {
				return literal{v: value{i: i}, raw: strconv.FormatInt(i, 10)}, nil
			}
		}
		if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			i := int64(f)
			return literal{v: value{i: i}, raw: strconv.FormatInt(i, 10)}, nil
		}
		return literal{v: value{f: f}, isFloat: true, raw: formatFloat(f)}, nil
	case TypeBool:
		if t.kind != tKeyword || (t.text != "TRUE" && t.text != "FALSE") {
			return literal{}, bad("TRUE or FALSE")
		}
		return literal{v: value{b: t.text == "TRUE"}, raw: t.text}, nil
	case TypeTimestamp:
		if t.kind != tString {
			return literal{}, bad("a time in a 'string' ('2026-03-01T12:00:00Z')")
		}
		for _, l := range timeLayouts {
			if tm, err := time.Parse(l, t.text); err == nil {
				us := tm.UnixMicro()
				return literal{v: value{i: us}, raw: quote(time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.999999Z07:00"))}, nil
			}
		}
		return literal{}, &Error{t.pos, fmt.Sprintf("column %s is a timestamp: %s is no time (want RFC 3339, '2026-03-01 12:00:00' or '2026-03-01', UTC unless an offset is given)", col.name, t.raw)}
	}
	return literal{}, bad("a literal")
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "1e999"
	case math.IsInf(f, -1):
		return "-1e999"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func quoteIdent(name string) string {
	for i := 0; i < len(name); i++ {
		if !isIdentByte(name[i]) {
			return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		}
	}
	return name
}
