"""Finding the ``rlrec`` command (the Go CLI) from Python.

The pip package is pure Python: it does not bring the CLI, which is a Go
program (building it needs Go at install time). The capture's ROOT
destination runs ``rlrec ingest``; it takes the command from, in order:
an explicit path (``Capture(rlrec=...)``), the ``RLREC_BIN`` environment
variable, then ``rlrec`` on ``PATH``.
"""

from __future__ import annotations

import os
import shutil

__all__ = ["CommandNotFoundError", "INSTALL_HINT", "find_rlrec"]

INSTALL_HINT = (
    "install the rlrec command from a clone of rlrec with `go install ./cmd/rlrec` "
    "(Go 1.26; it lands in $(go env GOPATH)/bin; the module is on no module proxy), or build it "
    "there with `go build -o rlrec ./cmd/rlrec`, then put it on PATH or set RLREC_BIN=/path/to/rlrec"
)


class CommandNotFoundError(FileNotFoundError):
    """The rlrec command is not where rlrec looked for it."""


def find_rlrec(explicit: str | os.PathLike[str] | None = None) -> str:
    """The path of the rlrec command (see the module doc)."""
    if explicit is not None:
        path = os.fspath(explicit)
        where = "rlrec="
    elif os.environ.get("RLREC_BIN"):
        path = os.environ["RLREC_BIN"]
        where = "RLREC_BIN"
    else:
        found = shutil.which("rlrec")
        if found is None:
            raise CommandNotFoundError(f"rlrec: no rlrec command on PATH and RLREC_BIN is not set: {INSTALL_HINT}")
        return found
    resolved = shutil.which(path) if os.sep not in path else path
    if resolved is None or not os.path.isfile(resolved) or not os.access(resolved, os.X_OK):
        raise CommandNotFoundError(f"rlrec: {where} names {path!r}, which is not an executable file: {INSTALL_HINT}")
    return resolved
