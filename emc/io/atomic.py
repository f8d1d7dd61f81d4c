"""Files written whole: to a temporary name in the same directory, then renamed over the target,
so a reader (another process, or `emc fit --resume` after a kill) sees the old file or the new
one, never half of one; and Ctrl-C waits until the file is in place."""
from __future__ import annotations

import os
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator


@contextmanager
def ctrl_c_deferred() -> Iterator[None]:
    """Ctrl-C (SIGINT) held back while the block runs, then delivered: a Ctrl-C inside np.savez's
    ZipFile constructor left a half-made ZipFile whose __del__ printed a traceback after an
    interrupted fit had been saved, and a temporary file in the run folder. Only the main thread
    sets signal handlers; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received and callable(previous):
        previous(signal.SIGINT, None)  # Python's own handler raises KeyboardInterrupt


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write `path` through: it replaces `path` when the block ends, synced to
    disk; if the block fails, `path` is left as it was and the temporary file is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with ctrl_c_deferred():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


def atomic_write(path: Path, data: bytes | str) -> None:
    with atomic_file(path) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
