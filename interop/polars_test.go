package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// nodePolarsEnv names the environment variable that holds the directory of
// npm's nodejs-polars package (polars' Rust engine behind a Node API), which
// .ci/run installs into its cache. No Python polars installs on the test
// machines, so the README's polars lines are run through it.
const nodePolarsEnv = "RLREC_NODE_POLARS"

// nodePolarsInstall is how a machine gets it.
const nodePolarsInstall = "npm install -E nodejs-polars@0.25.2 nodejs-polars-linux-x64-gnu@0.25.2 in a directory, " +
	"and RLREC_NODE_POLARS=DIR/node_modules/nodejs-polars (.ci/run does both)"

// nodePolars returns the nodejs-polars package directory and the node
// binary to run it, or fails the test saying how to install them.
func nodePolars(t *testing.T) (pkg, node string) {
	t.Helper()
	pkg = os.Getenv(nodePolarsEnv)
	if pkg == "" {
		t.Fatalf("%s is not set: %s", nodePolarsEnv, nodePolarsInstall)
	}
	if _, err := os.Stat(filepath.Join(pkg, "package.json")); err != nil {
		t.Fatalf("%s=%s: %v: %s", nodePolarsEnv, pkg, err, nodePolarsInstall)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("no node on PATH to run nodejs-polars (Debian: apt-get install nodejs; .ci/run installs it): %v", err)
	}
	return pkg, node
}

// readmePolars returns the calls pl.scan_parquet(...).collect() of the
// README's polars one-liners whose source starts with prefix.
func readmePolars(t *testing.T, prefix string) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, line := range strings.Split(string(readme), "\n") {
		_, call, ok := strings.Cut(line, "import polars as pl; print(")
		if !ok || !strings.HasPrefix(call, "pl.scan_parquet('"+prefix) {
			continue
		}
		calls = append(calls, strings.TrimSuffix(call, `)"`))
	}
	return calls
}

// polarsToJS translates a Python polars call pl.scan_parquet(SOURCE,
// name=value, ...).collect() into nodejs-polars: pl.scanParquet(SOURCE,
// {name: value, ...}).collectSync() (collect returns a promise there),
// names in camel case (storage_options is
// cloudOptions there), True and False as true and false. Dict and string
// literals are JavaScript as they are.
func polarsToJS(t *testing.T, call string) string {
	t.Helper()
	const open, tail = "pl.scan_parquet(", ").collect()"
	if !strings.HasPrefix(call, open) || !strings.HasSuffix(call, tail) {
		t.Fatalf("README polars line %q: want %s...%s", call, open, tail)
	}
	args := splitArgs(strings.TrimSuffix(strings.TrimPrefix(call, open), tail))
	var opts []string
	for _, a := range args[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			t.Fatalf("README polars line %q: argument %q is not name=value", call, a)
		}
		name = strings.TrimSpace(name)
		if name == "storage_options" {
			name = "cloudOptions"
		}
		opts = append(opts, camel(name)+": "+pythonBools.ReplaceAllStringFunc(strings.TrimSpace(value), strings.ToLower))
	}
	return "pl.scanParquet(" + args[0] + ", {" + strings.Join(opts, ", ") + "}).collectSync()"
}

var pythonBools = regexp.MustCompile(`\b(True|False)\b`)

func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		r := []rune(parts[i])
		r[0] = unicode.ToUpper(r[0])
		parts[i] = string(r)
	}
	return strings.Join(parts, "")
}

// splitArgs splits a call's argument list at its top-level commas.
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '(' || r == '[' || r == '{':
			depth++
		case r == ')' || r == ']' || r == '}':
			depth--
		case r == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// polarsResult is what runPolars reads back: the types of the partition
// columns and their values per row.
type polarsResult struct {
	Types  map[string]string `json:"types"`
	Rows   []map[string]any  `json:"rows"`
	Height int               `json:"height"`
}

// runPolars runs expr, a nodejs-polars expression giving a DataFrame, with
// env added to the environment, and returns its session_id and env_id
// columns. (The Node binding cannot hand Binary columns to JavaScript, so
// only those two are read out of the frame.)
func runPolars(t *testing.T, expr string, env []string) polarsResult {
	t.Helper()
	pkg, node := nodePolars(t)
	script := `const pl = require(process.argv[1]);
const df = ` + expr + `;
const ids = df.select("session_id", "env_id");
const types = {};
for (const c of ids.columns) types[c] = String(ids.getColumn(c).dtype);
process.stdout.write(JSON.stringify({types, rows: ids.toRecords(), height: df.height}));
`
	cmd := exec.Command(node, "-e", script, pkg)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("nodejs-polars: %v\n%s\nscript:\n%s", err, stderr, script)
	}
	var res polarsResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("nodejs-polars printed %q: %v", out, err)
	}
	return res
}

// checkIDs fails unless res holds the ids of sessions as strings, as
// written, n rows of them.
func checkIDs(t *testing.T, what string, res polarsResult, sessions map[string]string, n int) {
	t.Helper()
	for _, c := range []string{"session_id", "env_id"} {
		if res.Types[c] != "DataType(String)" {
			t.Errorf("%s: %s is %s, want a string column", what, c, res.Types[c])
		}
	}
	if res.Height != n || len(res.Rows) != n {
		t.Errorf("%s: %d rows (%d read out), want %d", what, res.Height, len(res.Rows), n)
	}
	for _, r := range res.Rows {
		sid, _ := r["session_id"].(string)
		env, _ := r["env_id"].(string)
		if want, ok := sessions[sid]; !ok || want != env {
			t.Errorf("%s: session_id %#v env_id %#v, want one of %v as written", what, r["session_id"], r["env_id"], sessions)
		}
	}
}

// TestPolarsIDsAsWritten runs the README's polars one-liner over a ROOT
// directory through nodejs-polars, on ids polars would otherwise take for
// a number and a date, and shows that a plain hive scan loses them.
func TestPolarsIDsAsWritten(t *testing.T) {
	root, sessions := idsRoot(t)
	calls := readmePolars(t, "ROOT/")
	if len(calls) == 0 {
		t.Fatal("no polars one-liner over ROOT/ in the README")
	}
	n := countRows(t, root, "episodes")
	for _, call := range calls {
		call = strings.ReplaceAll(call, "'ROOT/", "'"+root+"/")
		checkIDs(t, call, runPolars(t, polarsToJS(t, call), nil), sessions, n)
	}
	// What the README warns of: guessed types.
	plain := runPolars(t, "pl.scanParquet("+jsString(filepath.Join(root, "episodes", "**", "*.parquet"))+", {hivePartitioning: true}).collectSync()", nil)
	if plain.Types["session_id"] == "DataType(String)" && plain.Types["env_id"] == "DataType(String)" {
		t.Errorf("a plain polars hive scan kept the ids as strings (%v): the README's warning is out of date", plain.Types)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// countRows counts the rows of a table of a ROOT directory with DuckDB.
func countRows(t *testing.T, root, table string) int {
	t.Helper()
	db := openDuck(t)
	var n int
	if err := db.QueryRow("SELECT count(*) FROM " + scan(tableGlob(root, table), "hive_types_autocast=false")).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
