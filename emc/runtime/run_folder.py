"""Guarding a run folder (`emc fit --out RUN`) against lost work.

A fit refuses a folder that already holds a saved model or a checkpoint unless the user says
`--overwrite` (or continues it with `--resume`): a re-run with a typo must not replace a finished
30-iteration model. While a fit writes a folder it holds an exclusive lock on `RUN/.lock`, so a
second fit on the same folder stops at once with a message instead of both printing `saved to RUN`
while the folder keeps only the last one. The lock is an OS file lock (flock): a killed fit
releases it with its process, so there are no stale locks to clean up; what a killed fit leaves
(temporary files of writes it never finished) is removed by the next fit that takes the lock.

`--overwrite` sets the old checkpoint aside rather than deleting it: if the new fit fails before
writing its own (a full disk, a spec error, Ctrl-C), the old one is put back, so the folder can
still be resumed as it was.
"""
from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from emc.io.atomic import leftover_temporaries
from emc.runtime.checkpoint import NAME as CHECKPOINT
from emc.spec.errors import EmcError

LOCK = ".lock"
SET_ASIDE = f".{CHECKPOINT}.replaced"  # an old checkpoint while --overwrite's fit has not written its own
MODEL_FILES = ("run.json", "params.npz", CHECKPOINT)


def saved_in(out: Path) -> list[Path]:
    """The model and checkpoint files in `out` and its immediate subfolders (a structure that
    fits two directions saves one model per subfolder)."""
    folders = [out] + sorted(p for p in out.iterdir() if p.is_dir())
    return [folder / name for folder in folders for name in MODEL_FILES if (folder / name).exists()]


class RunFolderLock:
    """`with RunFolderLock(out, overwrite, resuming):` around everything a fit writes into `out`."""

    def __init__(self, out: Path, overwrite: bool = False, resuming: bool = False):
        self.out, self.overwrite, self.resuming = out, overwrite, resuming
        self.fd: int | None = None
        self.created = False
        self.set_aside: list[tuple[Path, Path]] = []  # (checkpoint, where it waits) under --overwrite

    def __enter__(self) -> "RunFolderLock":
        out = self.out
        if out.exists() and not out.is_dir():
            raise EmcError(f"--out {out}: is a file, not a folder; a run is saved as a folder of files, "
                           f"so give a new folder name")
        self.created = not out.exists()
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise EmcError(f"--out {out}: cannot create the folder ({err.strerror})") from None
        self._lock()
        self._clean_leftovers()
        found = saved_in(out)
        if found and not self.resuming:
            if not self.overwrite:
                self.release()
                raise EmcError(f"--out {out}: holds a saved model ({found[0].name}); choose another folder, "
                               f"add --overwrite to replace it, or continue it with `emc fit --resume {out}`")
            # an old checkpoint must not be resumed later as if it belonged to the new fit
            for path in found:
                if path.name == CHECKPOINT:
                    aside = path.with_name(SET_ASIDE)
                    os.replace(path, aside)
                    self.set_aside.append((path, aside))
        return self

    def _clean_leftovers(self) -> None:
        """Temporary files of a killed fit's unfinished writes, and a checkpoint set aside by a
        killed --overwrite: the folder is ours now, so no writer is using them."""
        for folder in [self.out] + [p for p in self.out.iterdir() if p.is_dir()]:
            for path in leftover_temporaries(folder) + [folder / SET_ASIDE]:
                if path.is_file():
                    path.unlink()

    def _settle_set_aside(self, failed: bool) -> None:
        """The old checkpoints go once the new fit has its own or has finished; else they come back."""
        for path, aside in self.set_aside:
            if failed and not path.exists():
                os.replace(aside, path)
            elif aside.exists():
                aside.unlink()
        self.set_aside = []

    def _lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # no flock on this platform: the folder is only checked, not locked
            return
        self.fd = os.open(self.out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(self.fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(self.fd)
            self.fd = None
            raise EmcError(f"--out {self.out}: another emc fit (process {holder}) is writing this folder; "
                           f"wait for it to finish or choose another folder") from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode("ascii"))

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._settle_set_aside(failed=error is not None)
        self.release()
        # a fit that failed before writing anything leaves no folder behind, as if never started
        if self.created and error is not None and [p.name for p in self.out.iterdir()] == [LOCK]:
            (self.out / LOCK).unlink()
            self.out.rmdir()
