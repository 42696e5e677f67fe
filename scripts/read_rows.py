#!/usr/bin/env python3
"""Prints the rows of a Parquet file as JSON lines (one object per row, the
columns as keys), for `kbsynth import` to read datasets in the
CUDA-Agent-Ops-6K layout (columns `code`, `ops`, `data_source`). Needs
pyarrow (scripts/setup.sh installs it).

    read_rows.py FILE.parquet [--columns code ops data_source]
"""

import argparse
import json
import sys


def plain(v):
    """Values pyarrow returns that json cannot write (numpy arrays, bytes)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--columns", nargs="*")
    a = ap.parse_args()
    try:
        import pyarrow.parquet as pq
    except ImportError:
        sys.stderr.write("read_rows.py: pyarrow is not installed (run scripts/setup.sh)\n")
        return 3
    try:
        pf = pq.ParquetFile(a.file)
    except Exception as e:  # noqa: BLE001
        sys.stderr.write(f"read_rows.py: {a.file}: not a readable Parquet file: {e}\n")
        return 2
    for batch in pf.iter_batches(columns=a.columns or None, batch_size=256):
        for row in batch.to_pylist():
            sys.stdout.write(json.dumps({k: plain(v) for k, v in row.items()}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
