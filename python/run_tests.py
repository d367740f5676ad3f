"""Runs the Python tests (python/tests) and ends with one summary line,
"python: N passed, N failed, N skipped". Exit status 1 on any failure,
and when no test ran.

    python3 python/run_tests.py [-v]
"""

import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "src"))
sys.path.insert(0, here)
tests = os.path.join(here, "tests")
# Modules written for pytest, with their own requirements
# (python/requirements-spark.txt): not run here.
pytest_only = {"test_spark.py"}
suite = unittest.TestSuite()
for name in sorted(os.listdir(tests)):
    if name.startswith("test_") and name.endswith(".py") and name not in pytest_only:
        suite.addTests(unittest.defaultTestLoader.discover(tests, pattern=name, top_level_dir=here))
verbosity = 2 if "-v" in sys.argv[1:] else 1
result = unittest.TextTestRunner(verbosity=verbosity).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
passed = result.testsRun - failed - skipped
print(f"python: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(0 if failed == 0 and result.testsRun > 0 else 1)
