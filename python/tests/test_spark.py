"""pyspark reads a ROOT in an S3 bucket in place and gets DuckDB's rows.

A real S3 server (versitygw, $RLREC_VERSITYGW) runs on loopback; the Go
CLI (`rlrec`, $RLREC_BIN or built from this checkout) records two
simulated cartpole sessions into s3://datasets/episode and
s3://datasets/session (one prefix per layout), with session ids 007 and
042 and env ids 2026-01-02 and 2026-01-03, which a reader guessing types
would turn into numbers and dates. Then:

- docs/object-storage.md's pyspark lines ("Reading a bucket in place") run as written,
  only HOST:PORT and BUCKET/PREFIX filled in, in this process: the first
  starts the module's one Spark session (local mode), the S3A connector
  coming through Spark's own package resolution (spark.jars.packages)
  from the local Maven repository .ci/run fills ($RLREC_SPARK_M2), so no
  test downloads anything; what they print equals DuckDB's answer to the
  same question;
- the same session reads the steps and episodes tables of both layouts
  through s3a:// (path-style, the loopback endpoint) and gets exactly the
  rows, every column, that DuckDB's Python package reads from the keys the
  bucket stores (versitygw keeps each object as a file: DuckDB's httpfs is
  downloaded when first loaded, which the test machines cannot), with the
  ids kept as written.

Settings that are the test's and not docs/object-storage.md's (local[2], 1 GiB of
driver memory, the driver bound to 127.0.0.1, no UI, where Ivy resolves
from) go in a spark-defaults.conf of its own (SPARK_CONF_DIR), read before
the JVM starts. Nothing here skips: a missing dependency (Java, versitygw,
the connector, Go) fails, naming the install.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import math
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from conftest import REPO, free_port

DOC = REPO / "docs" / "object-storage.md"
ACCESS, SECRET, REGION = "rlrec-test", "rlrec-test-secret", "us-east-1"
BUCKET = "datasets"
# The ids of the recordings: session id -> env id, each a value a guessing
# reader takes for a number or a date.
IDS = {"007": "2026-01-02", "042": "2026-01-03"}
LAYOUTS = ("episode", "session")
# A third prefix, of layout session: the all-leaves env, whose steps have a
# typed column of every leaf kind and dtype (signed and unsigned integers
# of each width, float16/32/64, bool, text, discrete, nested).
LEAVES = "leaves"
TABLES = ("episodes", "steps")
# The marker of docs/object-storage.md's pyspark lines over a bucket.
SPARK_LINE = 'python3 -c "from pyspark.sql import SparkSession;'


def readme_spark_lines() -> list[str]:
    """The pyspark lines of docs/object-storage.md over s3a://BUCKET/PREFIX/, as Python code
    (the text between python3 -c "...")."""
    lines = []
    for line in DOC.read_text().splitlines():
        line = line.strip()
        if line.startswith(SPARK_LINE) and "s3a://BUCKET/PREFIX/" in line:
            assert line.endswith('"'), (
                f"docs/object-storage.md pyspark line does not end with its closing quote: {line}"
            )
            code = line[len('python3 -c "') : -1]
            # Inside "..." the shell would expand these: the line must not
            # need them.
            for c in ("$", "`", "\\", '"'):
                assert c not in code, (
                    f"docs/object-storage.md pyspark line holds {c!r}, which the shell changes inside double quotes: {line}"
                )
            lines.append(code)
    return lines


@pytest.fixture(scope="module")
def versitygw(tmp_path_factory):
    """A versitygw on 127.0.0.1 with its posix backend in a temp directory:
    yields (endpoint, backend directory)."""
    binary = os.environ.get("RLREC_VERSITYGW")
    assert binary and os.access(binary, os.X_OK), (
        "RLREC_VERSITYGW must name the versitygw binary: bash .ci/run builds it into "
        "~/.cache/rlrec-ci/versitygw-v1.8.0/versitygw (GOBIN=DIR go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"
    )
    base = tmp_path_factory.mktemp("s3")
    data = base / "data"
    data.mkdir()
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    with open(base / "versitygw.log", "ab") as log:
        proc = subprocess.Popen(
            [binary, "--port", f"127.0.0.1:{port}", "--access", ACCESS, "--secret", SECRET,
             "--region", REGION, "--quiet", "posix", str(data)],
            stdout=log, stderr=log, env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "")},
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60  # a failure bound: the loop waits for an answer
        while True:
            assert proc.poll() is None, f"versitygw exited {proc.returncode}; see {base / 'versitygw.log'}"
            try:
                urllib.request.urlopen(endpoint, timeout=5)
                break
            except urllib.error.HTTPError:
                break  # it answers (403 to an unsigned request)
            except OSError:
                assert time.monotonic() < deadline, f"versitygw did not answer on {endpoint} within 60 s"
                time.sleep(0.05)
        yield endpoint, data
    finally:
        proc.terminate()
        proc.wait()


def rewrite_ids(src: Path, dst: Path) -> None:
    """Copies the event stream src to dst with its session and env ids
    replaced by those of IDS, in the order they first appear."""
    from google.protobuf.message import Message

    from rlrec._pb import events_pb2

    sessions, envs = {}, {}
    want_sessions = list(IDS)

    def ident(kind: dict, old: str, new) -> str:
        if old not in kind:
            kind[old] = new(len(kind))
        return kind[old]

    def fix(msg) -> None:
        for fd, value in msg.ListFields():
            if fd.name == "session_id" and fd.type == fd.TYPE_STRING:
                setattr(msg, fd.name, ident(sessions, value, lambda i: want_sessions[i]))
            elif fd.name == "env_id" and fd.type == fd.TYPE_STRING:
                setattr(msg, fd.name, ident(envs, value, lambda i: IDS[want_sessions[i]]))
            elif isinstance(value, Message):  # a set message field (not a repeated one)
                fix(value)

    data = src.read_bytes()
    out = bytearray()
    i = 0
    while i < len(data):
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        ev = events_pb2.Event.FromString(data[i : i + n])
        i += n
        fix(ev)
        body = ev.SerializeToString()
        v = len(body)
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        out += body
    dst.write_bytes(bytes(out))
    assert sorted(sessions.values()) == sorted(IDS), f"the stream has sessions {sorted(sessions)}, want {len(IDS)}"


@pytest.fixture(scope="module")
def bucket(rlrec_bin, versitygw, tmp_path_factory):
    rlrec = rlrec_bin
    """Records the cartpole sessions into s3://datasets/LAYOUT for each
    layout, and all-leaves into s3://datasets/leaves; returns (endpoint,
    {prefix: directory of the prefix's keys})."""
    endpoint, data = versitygw
    work = tmp_path_factory.mktemp("record")
    raw, stream = work / "raw.events", work / "ids.events"
    subprocess.run([rlrec, "simulate", "--env", "cartpole", "--envs", "2", "--episodes", "4", "--sessions", "2",
                    "--seed", "7", "--reproducible", "-o", str(raw)], check=True, capture_output=True)  # fmt: skip
    rewrite_ids(raw, stream)
    leaves = work / "leaves.events"
    subprocess.run([rlrec, "simulate", "--env", "all-leaves", "--envs", "2", "--episodes", "3",
                    "--reproducible", "-o", str(leaves)], check=True, capture_output=True)  # fmt: skip
    (data / BUCKET).mkdir()  # the posix backend's buckets are its directories
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION=REGION,
               AWS_ENDPOINT_URL=endpoint, AWS_CONFIG_FILE=str(work / "none"), AWS_SHARED_CREDENTIALS_FILE=str(work / "none"))  # fmt: skip
    env.pop("AWS_PROFILE", None)
    dirs = {}
    for prefix, layout, src in [*((layout, layout, stream) for layout in LAYOUTS), (LEAVES, "session", leaves)]:
        url = f"s3://{BUCKET}/{prefix}"
        p = subprocess.run([rlrec, "ingest", "--layout", layout, "-o", url, "--log-dir", str(work / f"log-{prefix}"), str(src)],
                           env=env, capture_output=True, text=True)  # fmt: skip
        assert p.returncode == 0, f"rlrec ingest -o {url}: exit {p.returncode}: {p.stderr}"
        dirs[prefix] = data / BUCKET / prefix
        assert list(dirs[prefix].glob("steps/**/*.parquet")), f"rlrec ingest -o {url} published no steps"
    return endpoint, dirs


def spark_conf_dir(base: Path) -> Path:
    """A SPARK_CONF_DIR with the test's settings: local mode on two cores
    with 1 GiB, bound to loopback, and spark.jars.packages resolved by Ivy
    from $RLREC_SPARK_M2 only."""
    m2 = os.environ.get("RLREC_SPARK_M2")
    assert m2 and (Path(m2) / "org/apache/hadoop/hadoop-aws").is_dir(), (
        "RLREC_SPARK_M2 must name a local Maven repository holding org.apache.hadoop:hadoop-aws and its dependencies: "
        "bash .ci/run fills ~/.cache/rlrec-ci/spark-s3a-VERSION/m2 (see its spark block)"
    )
    conf = base / "conf"
    conf.mkdir()
    (conf / "ivysettings.xml").write_text(f"""<ivysettings>
  <settings defaultResolver="local-maven"/>
  <caches useOrigin="true"/>
  <resolvers>
    <filesystem name="local-maven" m2compatible="true">
      <ivy pattern="{m2}/[organisation]/[module]/[revision]/[module]-[revision].pom"/>
      <artifact pattern="{m2}/[organisation]/[module]/[revision]/[artifact]-[revision](-[classifier]).[ext]"/>
    </filesystem>
  </resolvers>
</ivysettings>
""")
    (conf / "spark-defaults.conf").write_text(f"""spark.master local[2]
spark.driver.memory 1g
spark.driver.host 127.0.0.1
spark.driver.bindAddress 127.0.0.1
spark.ui.enabled false
spark.sql.shuffle.partitions 2
spark.jars.ivySettings {conf / "ivysettings.xml"}
spark.jars.ivy {base / "ivy"}
""")
    return conf


@pytest.fixture(scope="module")
def readme_run(bucket, tmp_path_factory):
    """Runs docs/object-storage.md's pyspark lines on each layout's prefix; yields
    ({(layout, line index): what it printed}, the Spark session they
    started)."""
    assert shutil.which("java") or os.environ.get("JAVA_HOME"), (
        "Spark needs Java 17 or 21: install it (Debian's openjdk-17-jre-headless)"
    )
    from pyspark.sql import SparkSession

    assert SparkSession.getActiveSession() is None, (
        "a Spark session is already running: this module's settings would not apply"
    )
    endpoint, _ = bucket
    spark_dir = tmp_path_factory.mktemp("spark")
    lines = readme_spark_lines()
    assert len(lines) >= 2, (
        "docs/object-storage.md has no pyspark lines over s3a://BUCKET/PREFIX/ (one for episodes, one for steps)"
    )
    env = {
        "SPARK_CONF_DIR": str(spark_conf_dir(spark_dir)),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "AWS_ACCESS_KEY_ID": ACCESS,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        # Nothing may reach for an instance metadata service off loopback.
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    outputs = {}
    try:
        for layout in LAYOUTS:
            for i, code in enumerate(lines):
                code = code.replace("http://HOST:PORT", endpoint).replace(
                    "s3a://BUCKET/PREFIX/", f"s3a://{BUCKET}/{layout}/"
                )
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(code, {})  # noqa: S102 - docs/object-storage.md's line, as python3 -c runs it
                outputs[(layout, i)] = out.getvalue()
        spark = SparkSession.getActiveSession()
        assert spark is not None, "docs/object-storage.md's pyspark lines left no Spark session"
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        yield outputs, spark
        stop_spark(spark)
    finally:
        # The connector's jars Ivy copied for Spark (680 MB): pytest keeps
        # the last runs' temp directories.
        shutil.rmtree(spark_dir / "ivy", ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def stop_spark(spark) -> None:
    """Stops the session and the JVM pyspark started for it, which would
    otherwise hold its memory until the test process exits."""
    from pyspark import SparkContext

    spark.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    gateway.shutdown()
    proc = getattr(gateway, "proc", None)  # the JVM launch_gateway started
    if proc is not None:
        proc.terminate()
        proc.wait(timeout=120)  # a failure bound
    SparkContext._gateway = None
    SparkContext._jvm = None


def duck_scan(prefix_dir: Path, table: str) -> str:
    return f"read_parquet('{prefix_dir}/{table}/**/*.parquet', hive_partitioning=true, hive_types_autocast=false)"


def parse_show(text: str) -> list[dict[str, str]]:
    """The rows of a DataFrame.show(truncate=False) table, as strings."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows, f"no table in the output:\n{text}"
    split = [[c.strip() for c in line.strip("|").split("|")] for line in rows]
    return [dict(zip(split[0], r)) for r in split[1:]]


def norm(v):
    """A value as both readers give it, comparable: bytes for binary,
    an aware UTC datetime for a timestamp (Spark gives naive local time,
    DuckDB an aware one), int for an integral decimal, tuples for lists, sorted items for maps and
    structs, a marker for NaN."""
    if isinstance(v, bytearray | memoryview):
        return bytes(v)
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.UTC)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, Decimal) and v == v.to_integral_value():
        return int(v)  # Spark reads UINT64 as decimal(20,0), DuckDB as UBIGINT
    if hasattr(v, "asDict"):  # a Spark Row (struct)
        v = v.asDict()
    if isinstance(v, dict):
        return tuple(sorted((str(k), norm(x)) for k, x in v.items()))
    if isinstance(v, list | tuple):
        return tuple(norm(x) for x in v)
    return v


def sort_key(row: tuple) -> str:
    return repr(row)


def test_readme_pyspark_lines(readme_run, bucket):
    """The document's lines print what DuckDB answers to the same question:
    per session, env and status the count of episodes; per session and env
    the steps and their reward."""
    outputs, _ = readme_run
    _, dirs = bucket
    questions = {
        "episodes": (
            "SELECT session_id, env_id, status, count(*) AS episodes FROM {} GROUP BY ALL",
            ("session_id", "env_id", "status"),
        ),
        "steps": (
            "SELECT session_id, env_id, count(*) AS steps, sum(reward) AS reward FROM {} GROUP BY ALL",
            ("session_id", "env_id"),
        ),
    }
    lines = readme_spark_lines()
    for layout in LAYOUTS:
        for i, code in enumerate(lines):
            table = re.search(r"s3a://BUCKET/PREFIX/(\w+)", code).group(1)
            assert table in questions, (
                f"docs/object-storage.md pyspark line reads {table}, which this test does not check: {code}"
            )
            sql, keys = questions[table]
            res = duckdb.sql(sql.format(duck_scan(dirs[layout], table)))
            want = {tuple(r[: len(keys)]): dict(zip(res.columns, r)) for r in res.fetchall()}
            got = parse_show(outputs[(layout, i)])
            assert len(got) == len(want), (
                f"{layout}: line {i} printed {len(got)} rows, DuckDB has {len(want)}:\n{outputs[(layout, i)]}"
            )
            for row in got:
                key = tuple(row[k] for k in keys)
                assert key in want, f"{layout}: line {i} printed {row}, whose ids DuckDB does not have: {sorted(want)}"
                for col, v in want[key].items():
                    if col in keys:
                        continue
                    name = col if col in row else "count"  # groupBy().count() names its column count
                    assert name in row, f"{layout}: line {i} printed no {col}: {row}"
                    if isinstance(v, float):
                        assert math.isclose(float(row[name]), v, rel_tol=1e-9), (
                            f"{layout} {key} {col}: Spark {row[name]}, DuckDB {v}"
                        )
                    else:
                        assert row[name] == str(v), f"{layout} {key} {col}: Spark {row[name]}, DuckDB {v}"
            assert {k[:2] for k in want} == set(IDS.items()), f"{layout}: ids {sorted(want)}, want {IDS} as written"


@pytest.mark.parametrize("layout", [*LAYOUTS, LEAVES])
@pytest.mark.parametrize("table", TABLES)
def test_table_rows_equal_duckdb(readme_run, bucket, layout, table):
    """Every row and column Spark reads through s3a:// is what DuckDB reads
    from the same keys, the partition columns strings as written; layout
    is the prefix (LAYOUTS, or LEAVES of layout session)."""
    _, spark = readme_run
    _, dirs = bucket
    df = spark.read.parquet(f"s3a://{BUCKET}/{layout}/{table}")
    for part in ("session_id", "env_id") + (("episode_record_id",) if (layout, table) == ("episode", "steps") else ()):
        assert df.schema[part].dataType.typeName() == "string", (
            f"{layout} {table}: Spark read {part} as {df.schema[part].dataType}"
        )
    res = duckdb.sql(f"SELECT * FROM {duck_scan(dirs[layout], table)}")
    assert sorted(df.columns) == sorted(res.columns), (
        f"{layout} {table}: Spark's columns {sorted(df.columns)}, DuckDB's {sorted(res.columns)}"
    )
    cols = sorted(res.columns)
    got = sorted((tuple(norm(r[c]) for c in cols) for r in df.collect()), key=sort_key)
    order = [res.columns.index(c) for c in cols]  # the leaf columns' names have dots: no select by name
    want = sorted((tuple(norm(r[i]) for i in order) for r in res.fetchall()), key=sort_key)
    assert want, f"{layout} {table}: DuckDB read no rows"
    assert len(got) == len(want), f"{layout} {table}: Spark read {len(got)} rows, DuckDB {len(want)}"
    for g, w in zip(got, want):
        assert g == w, f"{layout} {table}: a row differs\nSpark:  {dict(zip(cols, g))}\nDuckDB: {dict(zip(cols, w))}"
    if layout in LAYOUTS:
        sids = {r[cols.index("session_id")]: r[cols.index("env_id")] for r in got}
        assert sids == IDS, f"{layout} {table}: ids {sids}, want {IDS} as written"


def test_inference_changes_ids(readme_run):
    """What docs/object-storage.md's spark.sql.sources.partitionColumnTypeInference
    setting is for: with Spark's default the ids are read as numbers and
    dates, 007 as 7."""
    _, spark = readme_run
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "true")
    try:
        df = spark.read.parquet(f"s3a://{BUCKET}/session/episodes")
        types = {f.name: f.dataType.typeName() for f in df.schema.fields}
        assert types["session_id"] != "string" and types["env_id"] == "date", (
            f"Spark's default inference kept the ids as strings ({types}): docs/object-storage.md's warning is out of date"
        )
        assert {str(r.session_id) for r in df.select("session_id").distinct().collect()} == {"7", "42"}
    finally:
        spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")


def test_connector_matches_pyspark_hadoop():
    """The document's hadoop-aws version is the Hadoop pyspark is built with
    (S3A must match it), and the one .ci/run resolves."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    api = sorted(jars.glob("hadoop-client-api-*.jar"))
    assert api, f"no hadoop-client-api jar in {jars}"
    hadoop = api[0].name[len("hadoop-client-api-") : -len(".jar")]
    for code in readme_spark_lines():
        m = re.search(r"org\.apache\.hadoop:hadoop-aws:([0-9.]+)", code)
        assert m and m.group(1) == hadoop, (
            f"docs/object-storage.md pyspark line names hadoop-aws {m and m.group(1)}, pyspark {pyspark.__version__} has Hadoop {hadoop}: {code}"
        )
    sums = (REPO / ".ci" / "spark-s3a.sha256").read_text()
    assert f"hadoop-aws/{hadoop}/hadoop-aws-{hadoop}.jar" in sums, (
        f".ci/spark-s3a.sha256 does not pin hadoop-aws {hadoop}"
    )
