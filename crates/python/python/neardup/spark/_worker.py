"""What the job's functions do in a Python worker before their first batch."""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable, Iterator, Optional, Tuple


def executor(fn: Callable[[Iterator[Any]], Iterator[Any]]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """`fn`, a `mapInArrow` function, run after `prepare()` in the worker that runs it."""

    @functools.wraps(fn)
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        prepare()
        return fn(batches)

    return run


def prepare() -> None:
    """Makes the worker's later tasks start faster, once per worker process (PySpark reuses
    workers from task to task).

    PySpark's worker calls `importlib.invalidate_caches()` before every task, and
    `sys.path` holds PySpark's own zips (pyspark.zip, py4j's). Before Python 3.12 a zip
    importer's `invalidate_caches` reads the archive's whole directory again, once per
    importer: 0.1-0.15 s of every task with PySpark 4.0 on Python 3.11, more than most of
    this job's tasks take (CPython gh-103200, fixed in 3.12 by reading lazily). Here an
    archive is read again only where its modification time or size changed since it was
    last read, which is what invalidation guards against."""
    if sys.version_info >= (3, 12):
        return
    import zipimport

    importer = zipimport.zipimporter
    if getattr(importer, "_neardup_stat_checked", False):
        return
    reread = importer.invalidate_caches

    def invalidate_caches(self: Any) -> None:
        seen = _stat(self.archive)
        if seen is not None and getattr(self, "_neardup_stat", None) == seen:
            return
        reread(self)
        self._neardup_stat = seen

    importer.invalidate_caches = invalidate_caches  # type: ignore[method-assign]
    importer._neardup_stat_checked = True  # type: ignore[attr-defined]


def _stat(path: str) -> Optional[Tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)
