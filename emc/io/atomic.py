"""Files written whole: to a temporary name in the same directory, then renamed over the target,
so a reader (another process, or `emc fit --resume` after a kill) sees the old file or the new
one, never half of one; and Ctrl-C (or SIGTERM) waits until the file is in place."""
from __future__ import annotations

import os
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from emc.spec.errors import EmcError


def write_failed(path: Path, err: OSError) -> EmcError:
    """The message for a file that could not be written (a full disk, no permission): the old file
    is kept, since everything is written to a temporary name first."""
    what = err.strerror or str(err)
    return EmcError(f"{path}: cannot write ({what}){'; the previous file is kept' if path.exists() else ''}")


STOPS = (signal.SIGINT, signal.SIGTERM)  # Ctrl-C, and `kill` or a batch system's time limit


@contextmanager
def stops_deferred() -> Iterator[None]:
    """Ctrl-C (SIGINT) and SIGTERM held back while the block runs, then delivered: a Ctrl-C inside
    np.savez's ZipFile constructor left a half-made ZipFile whose __del__ printed a traceback after
    an interrupted fit had been saved, and a temporary file in the run folder. Only the main thread
    sets signal handlers; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {stop: signal.signal(stop, lambda signum, frame: received.append(signum)) for stop in STOPS}
    try:
        yield
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
    for stop in dict.fromkeys(received):
        if callable(previous[stop]):  # Python's own SIGINT handler, or the CLI's SIGTERM one: KeyboardInterrupt
            previous[stop](stop, None)
        elif previous[stop] == signal.SIG_DFL:
            signal.raise_signal(stop)  # the default action (SIGTERM's: the process ends), late


TMP_SUFFIX = ".tmp"


def temporary_name(path: Path) -> str:
    """The prefix of `path`'s temporary files (`.NAME.` + random + `.tmp`): what a killed writer leaves."""
    return f".{path.name}."


def leftover_temporaries(folder: Path) -> list[Path]:
    """Temporary files of writes that never finished (a kill -9 between creating and renaming)."""
    return [p for p in folder.glob(f".*{TMP_SUFFIX}") if p.is_file()]


@contextmanager
def _temporary(path: Path) -> Iterator[tuple[BinaryIO, str]]:
    """A synced temporary file beside `path` (removed if the block fails); OSError (a full disk)
    becomes a message naming `path`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temporary_name(path), suffix=TMP_SUFFIX)
    except OSError as err:
        raise write_failed(path, err) from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f, tmp
            f.flush()
            os.fsync(f.fileno())
    except BaseException as err:
        os.unlink(tmp)
        if isinstance(err, OSError):
            raise write_failed(path, err) from None
        raise


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write `path` through: it replaces `path` when the block ends, synced to
    disk; if the block fails, `path` is left as it was and the temporary file is removed."""
    with stops_deferred():
        with _temporary(path) as (f, tmp):
            yield f
        _replace(tmp, path)


def _replace(tmp: str, path: Path) -> None:
    try:
        os.replace(tmp, path)
    except OSError as err:
        os.unlink(tmp)
        raise write_failed(path, err) from None


class StagedFiles:
    """Files of one folder written together (`staged_files`): each to a temporary name, and only
    once all of them are whole are they renamed into place."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.ready: list[tuple[str, Path]] = []

    @contextmanager
    def open(self, name: str) -> Iterator[BinaryIO]:
        path = self.folder / name
        with _temporary(path) as (f, tmp):
            self.ready.append((tmp, path))
            yield f

    def write(self, name: str, data: bytes | str) -> None:
        with self.open(name) as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)


@contextmanager
def staged_files(folder: Path) -> Iterator[StagedFiles]:
    """`with staged_files(run) as stage: stage.write(...)`: if any file cannot be written (a full
    disk), none replaces its old version, so a folder never mixes a new spec with old parameters."""
    stage = StagedFiles(folder)
    with stops_deferred():
        try:
            yield stage
        except BaseException:
            for tmp, _ in stage.ready:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            raise
        for tmp, path in stage.ready:
            _replace(tmp, path)


def atomic_write(path: Path, data: bytes | str) -> None:
    with atomic_file(path) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
