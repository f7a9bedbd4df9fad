# SPDX-License-Identifier: Apache-2.0
"""`from wds2idx import IndexCreator`, as DALI's wheel offers it: the index of a WebDataset tar
file (readers.webdataset's index_paths) in DALI's wds2idx format, written by the `sluice wds2idx`
command of this package (`python3 -m wds2idx ARCHIVE [INDEX]` runs that command too). Unlike
DALI's, the index file is not touched before create_index(), which writes it whole or not at all."""

import os
import subprocess
import sys

from sluice.__main__ import tool_path, wds2idx as _command


class IndexCreator:
    """Writes the index of the WebDataset tar file `uri` to `idx_path` (DALI's IndexCreator):
    `with IndexCreator("data/a.tar", "data/a.idx") as ic: ic.create_index()`. verbose: print
    what was written (to stderr) once it is."""

    def __init__(self, uri: "str | os.PathLike", idx_path: "str | os.PathLike",
                 verbose: bool = True) -> None:
        self.uri = os.fspath(uri)
        self.idx_path = os.fspath(idx_path)
        self.verbose = bool(verbose)

    def __enter__(self) -> "IndexCreator":
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.close()

    def open(self) -> None:
        """Nothing to open: create_index() reads the tar and writes the index in one go."""

    def close(self) -> None:
        """Nothing to close (DALI's closes the index file it holds open)."""

    def reset(self) -> None:
        """Nothing to reset (see open)."""

    @staticmethod
    def split_name(filepath: str) -> "tuple[str, str]":
        """A member path's key and extension: split at the first '.' of its file name."""
        dot = filepath.find(".", filepath.rfind("/") + 1)
        return (filepath, "") if dot < 0 else (filepath[:dot], filepath[dot + 1:])

    def create_index(self) -> None:
        """Writes the index; a tar that cannot be indexed raises ValueError naming it and why."""
        r = subprocess.run([tool_path(), "wds2idx", self.uri, self.idx_path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise ValueError(r.stderr.strip() or "sluice wds2idx %s: exit status %d"
                             % (self.uri, r.returncode))
        if self.verbose:
            print(r.stderr.strip(), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(_command())
