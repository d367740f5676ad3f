package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rlrec/rlrec/internal/hive"
)

// pythonRootEnv names the ROOT that python/tests/test_capture.py left (it
// copies its ingest ROOT there when RLREC_PY_ROOT_OUT is set); the
// manifest beside it, ROOT.json, says what the Python side fed in.
const pythonRootEnv = "RLREC_PY_ROOT"

type pythonManifest struct {
	SessionID    string   `json:"session_id"`
	EnvIDs       []string `json:"env_ids"`
	Steps        []int64  `json:"steps"`
	Instructions []string `json:"instructions"`
}

// TestPythonCaptureInDuckDB reads the recording of the Python capture
// (three runs under one session id: a Box/Discrete env, a Dict env with an
// image and a Text instruction, a Tuple env) with DuckDB. .ci/run runs the
// Python tests first and sets RLREC_PY_ROOT; without it the test runs the
// Python test that records it (pythonRoot).
func TestPythonCaptureInDuckDB(t *testing.T) {
	root := os.Getenv(pythonRootEnv)
	if root == "" {
		root = pythonRoot(t)
	}
	b, err := os.ReadFile(root + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var m pythonManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s.json: %v", root, err)
	}
	if len(m.EnvIDs) != 3 || len(m.Steps) != 3 {
		t.Fatalf("manifest %+v: want three runs", m)
	}
	db := openDuck(t)

	sessions := query(t, db, "SELECT session_id, env_id, status, reason, total_steps, steps_recorded, problems FROM "+
		scan(tableGlob(root, "sessions"))+" ORDER BY started_at")
	if len(sessions) != 3 {
		t.Fatalf("%d sessions rows, want 3: %v", len(sessions), sessions)
	}
	for i, r := range sessions {
		checkEq(t, "session_id", r["session_id"], m.SessionID)
		checkEq(t, "env_id", r["env_id"], m.EnvIDs[i])
		checkEq(t, "status", r["status"], "ended")
		checkEq(t, "reason", r["reason"], "completed requested episodes")
		checkEq(t, "total_steps", r["total_steps"], m.Steps[i])
		checkEq(t, "steps_recorded", r["steps_recorded"], m.Steps[i])
		checkEq(t, "problems", r["problems"], int64(0))
	}

	for i, env := range m.EnvIDs {
		rec := hive.Recording{SessionID: m.SessionID, EnvID: env}
		n := query(t, db, "SELECT count(*) AS n, count(DISTINCT episode_id) AS eps FROM "+scan(recordingGlob(root, "steps", rec)))
		checkEq(t, rec.String()+" steps", n[0]["n"], m.Steps[i])
	}

	// The episodes of the first run: completed, success from is_success.
	cart := hive.Recording{SessionID: m.SessionID, EnvID: m.EnvIDs[0]}
	eps := query(t, db, "SELECT episode_record_id, status, started_from_auto_reset, step_count, steps_recorded FROM "+
		scan(recordingGlob(root, "episodes", cart))+" ORDER BY episode_record_id")
	if len(eps) != 3 {
		t.Fatalf("%d episodes rows for %s, want 3", len(eps), cart)
	}
	for i, r := range eps {
		checkEq(t, "episode_record_id", r["episode_record_id"], []string{"ep-000001", "ep-000002", "ep-000003"}[i])
		checkEq(t, "status", r["status"], "completed")
		checkEq(t, "started_from_auto_reset", r["started_from_auto_reset"], i > 0)
		checkEq(t, "steps_recorded", r["steps_recorded"], r["step_count"])
	}

	// The Dict run's typed columns: the Text leaf as a string, the image
	// as a list of 4x4x3 bytes, the state as floats.
	pick := hive.Recording{SessionID: m.SessionID, EnvID: m.EnvIDs[1]}
	rows := query(t, db, `SELECT DISTINCT "observation.instruction" AS s FROM `+scan(recordingGlob(root, "steps", pick))+" ORDER BY s")
	var got []string
	for _, r := range rows {
		got = append(got, r["s"].(string))
	}
	slices.Sort(got)
	wantInstr := slices.Clone(m.Instructions)
	slices.Sort(wantInstr)
	if !slices.Equal(got, wantInstr) {
		t.Errorf("instructions %q, the Python side fed %q", got, wantInstr)
	}
	shape := query(t, db, `SELECT min(len("observation.image")) AS lo, max(len("observation.image")) AS hi, `+
		`min(len("observation.state")) AS st, min(len(action)) AS act FROM `+scan(recordingGlob(root, "steps", pick)))
	checkEq(t, "image elements (min)", shape[0]["lo"], int64(48))
	checkEq(t, "image elements (max)", shape[0]["hi"], int64(48))
	checkEq(t, "state elements", shape[0]["st"], int64(3))
	checkEq(t, "action elements", shape[0]["act"], int64(2))
}

// pythonRoot runs the Python capture's test that records three runs into
// one ROOT (python/tests/test_capture.py, IngestTest) with $PYTHON (.ci/run
// sets it to its venv's python; else python3), which needs the rlrec
// package and its test dependencies, and returns the copy of the ROOT it
// leaves.
func pythonRoot(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "python3"
	}
	if out, err := exec.Command(py, "-c", "import rlrec, pytest").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import rlrec and pytest (%v: %s): pip install -r python/requirements-ci.txt ./python, or run bash .ci/run, which does", py, err, out)
	}
	root := filepath.Join(t.TempDir(), "python-capture-root")
	cmd := exec.Command(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_capture.py", "-k", "test_three_envs_into_one_root")
	cmd.Dir = filepath.Join("..", "python")
	cmd.Env = append(os.Environ(), "RLREC_PY_ROOT_OUT="+root, "RLREC_BIN="+rlrecBinary(t))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Python capture test failed (%v):\n%s", err, out)
	}
	return root
}
