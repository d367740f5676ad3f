package filedeps

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Graph is the file dependency graph of one package: Edges[a][b] is true
// when file a uses a name declared in file b. Files are base names.
type Graph struct {
	Files []string
	Edges map[string]map[string]bool
	// Uses[a][b] lists, sorted, the names file a uses from file b.
	Uses map[string]map[string][]string
}

// Pair is two files, in either order.
type Pair struct{ A, B string }

func (p Pair) norm() Pair {
	if p.B < p.A {
		return Pair{p.B, p.A}
	}
	return p
}

func (p Pair) String() string { return p.A + " <-> " + p.B }

// Load parses and type-checks the non-test files of the package in dir
// and returns their dependency graph. Imports are read from the export
// data the go command builds (go list -export), so the go tool must be
// on PATH.
func Load(dir string) (*Graph, error) {
	exports, err := exportFiles(dir)
	if err != nil {
		return nil, err
	}
	goFiles, err := goList(dir, "{{join .GoFiles \"\\n\"}}")
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	var names []string
	for _, name := range strings.Split(strings.TrimSpace(goFiles), "\n") {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("filedeps: parse: %w", err)
		}
		files = append(files, f)
		names = append(names, name)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("filedeps: %s has no non-test Go files", dir)
	}
	sort.Strings(names)
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("filedeps: no export data for %q (run go build in %s)", path, dir)
		}
		return os.Open(f)
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check(files[0].Name.Name, fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("filedeps: type-check %s: %w", dir, err)
	}
	g := &Graph{Files: names, Edges: map[string]map[string]bool{}, Uses: map[string]map[string][]string{}}
	seen := map[[3]string]bool{}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !declaredAtTop(pkg, obj) {
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from == to {
			continue
		}
		if g.Edges[from] == nil {
			g.Edges[from] = map[string]bool{}
		}
		g.Edges[from][to] = true
		if g.Uses[from] == nil {
			g.Uses[from] = map[string][]string{}
		}
		name := obj.Name()
		if f, ok := obj.(*types.Func); ok && f.Signature().Recv() != nil {
			name = recvName(f.Signature().Recv().Type()) + "." + name
		}
		if !seen[[3]string{from, to, name}] {
			seen[[3]string{from, to, name}] = true
			g.Uses[from][to] = append(g.Uses[from][to], name)
		}
	}
	for _, tos := range g.Uses {
		for _, ns := range tos {
			sort.Strings(ns)
		}
	}
	return g, nil
}

// recvName is the name of a method's receiver type.
func recvName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return t.String()
}

// Why says which names each file of p uses from the other.
func (g *Graph) Why(p Pair) string {
	return fmt.Sprintf("%s uses %s; %s uses %s", p.A, short(g.Uses[p.A][p.B]), p.B, short(g.Uses[p.B][p.A]))
}

func short(names []string) string {
	if len(names) > 6 {
		return strings.Join(names[:6], ", ") + fmt.Sprintf(" and %d more", len(names)-6)
	}
	return strings.Join(names, ", ")
}

// declaredAtTop reports whether obj is a package-level name, a method or
// a field: the names one file can use from another.
func declaredAtTop(pkg *types.Package, obj types.Object) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	switch o := obj.(type) {
	case *types.Func:
		return o.Signature().Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}

// exportFiles maps every package the package in dir imports, directly or
// not, to its export data file.
func exportFiles(dir string) (map[string]string, error) {
	out, err := goList(dir, "{{.ImportPath}}\t{{.Export}}", "-export", "-deps")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		path, file, _ := strings.Cut(line, "\t")
		m[path] = file
	}
	return m, nil
}

// goList runs go list -f format on the package in dir: the go command
// says which files build (with their build tags) and where export data is.
func goList(dir, format string, flags ...string) (string, error) {
	args := append([]string{"list"}, flags...)
	cmd := exec.Command("go", append(args, "-f", format, ".")...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("filedeps: go %s in %s: %w: %s", strings.Join(cmd.Args[1:], " "), dir, err, stderr.String())
	}
	return string(out), nil
}

// Count returns the number of file-to-file dependencies and of mutual
// pairs in g.
func (g *Graph) Count() (deps, mutual int) {
	for a, tos := range g.Edges {
		for b := range tos {
			deps++
			if a < b && g.Edges[b][a] {
				mutual++
			}
		}
	}
	return deps, mutual
}

// MutualPairs lists the pairs of files that use each other, sorted.
func (g *Graph) MutualPairs() []Pair {
	var ps []Pair
	for a, tos := range g.Edges {
		for b := range tos {
			if a < b && g.Edges[b][a] {
				ps = append(ps, Pair{a, b})
			}
		}
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].A != ps[j].A {
			return ps[i].A < ps[j].A
		}
		return ps[i].B < ps[j].B
	})
	return ps
}

// Cycles returns the strongly connected sets of two or more files once
// the edges between the allowed pairs are removed, each sorted, with one
// cycle through each set's first file drawn as "a -> b -> a".
func (g *Graph) Cycles(allowed []Pair) (sets [][]string, paths []string) {
	skip := map[Pair]bool{}
	for _, p := range allowed {
		skip[p.norm()] = true
	}
	succ := func(a string) []string {
		var out []string
		for b := range g.Edges[a] {
			if !skip[Pair{a, b}.norm()] {
				out = append(out, b)
			}
		}
		sort.Strings(out)
		return out
	}
	// Tarjan's algorithm.
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range succ(v) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var set []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				set = append(set, w)
				if w == v {
					break
				}
			}
			if len(set) > 1 {
				sort.Strings(set)
				sets = append(sets, set)
			}
		}
	}
	for _, f := range g.Files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i][0] < sets[j][0] })
	for _, set := range sets {
		in := map[string]bool{}
		for _, f := range set {
			in[f] = true
		}
		paths = append(paths, shortestCycle(set[0], func(a string) []string {
			var out []string
			for _, b := range succ(a) {
				if in[b] {
					out = append(out, b)
				}
			}
			return out
		}))
	}
	return sets, paths
}

// shortestCycle draws the shortest cycle from start back to it.
func shortestCycle(start string, succ func(string) []string) string {
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		for _, b := range succ(a) {
			if b == start {
				path := []string{start}
				for c := a; c != start; c = prev[c] {
					path = append(path, c)
				}
				path = append(path, start)
				// path is start, reversed walk..., start: put the walk in order.
				for i, j := 1, len(path)-2; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return strings.Join(path, " -> ")
			}
			if _, seen := prev[b]; !seen && b != start {
				prev[b] = a
				queue = append(queue, b)
			}
		}
	}
	return start
}

// Allowed is one allowlisted mutual pair and why it stays.
type Allowed struct {
	Pair
	Reason string
}

// Check loads the package in dir and returns one line per problem: each
// cycle left once the allowed pairs' edges are removed, each allowed pair
// that no longer depends both ways, and each allowed pair without a
// reason. It returns the graph too, for counts.
func Check(dir string, allowed []Allowed) (*Graph, []string, error) {
	g, err := Load(dir)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	var pairs []Pair
	for _, a := range allowed {
		pairs = append(pairs, a.Pair)
		if strings.TrimSpace(a.Reason) == "" {
			problems = append(problems, fmt.Sprintf("allowlisted pair %s has no reason", a.Pair))
		}
		if !g.Edges[a.A][a.B] || !g.Edges[a.B][a.A] {
			problems = append(problems, fmt.Sprintf("allowlisted pair %s no longer depends both ways: remove it from the allowlist", a.Pair))
		}
	}
	sets, paths := g.Cycles(pairs)
	for i, set := range sets {
		var mutual []string
		for _, p := range (&Graph{Edges: g.Edges}).MutualPairs() {
			if contains(set, p.A) && contains(set, p.B) && !contains2(pairs, p) {
				mutual = append(mutual, g.Why(p))
			}
		}
		problems = append(problems, fmt.Sprintf("cycle among %s: %s\n\tmutual pairs:\n\t%s",
			strings.Join(set, ", "), paths[i], strings.Join(mutual, "\n\t")))
	}
	return g, problems, nil
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func contains2(ps []Pair, p Pair) bool {
	for _, q := range ps {
		if q.norm() == p.norm() {
			return true
		}
	}
	return false
}
