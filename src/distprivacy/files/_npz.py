"""Reading ``.npz`` files defensively (see :mod:`distprivacy.files`)."""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from distprivacy.files._values import InvalidFileError, _short

#: Default limit on the declared uncompressed size of an ``.npz`` file's arrays (bytes).
MAX_NPZ_BYTES: int = 2 * 2**30

_KIND_NAMES = {"f": "floating-point numbers", "U": "text", "i": "integers", "b": "booleans"}

#: Most members read from an ``.npz`` file.
MAX_NPZ_MEMBERS: int = 1024


def _size(x: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if x >= f:
            return f"{x / f:.3g} {unit}"
    return f"{int(x)} bytes"


def read_npz(
    path: str | Path,
    what: str,
    *,
    max_bytes: int = MAX_NPZ_BYTES,
    kinds: Mapping[str, str] | None = None,
    default_kind: str = "f",
    check_names: Callable[[list[str]], None] | None = None,
) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file, read defensively.

    Before any array is read: the file must be a zip archive of ``.npy`` members with distinct
    names; the sizes the archive declares for them (uncompressed) must add up to at most
    ``max_bytes`` (a zip bomb is refused with its figure and the limit); and each member's
    ``.npy`` header must give a dtype of the expected kind and a shape whose data fits in the
    member (no allocation from a forged shape). Object arrays are never unpickled. Truncated or
    corrupt members (bad CRC, short data) are refused.

    Parameters
    ----------
    path : str or Path
    what : str
        What the file is, for the messages (``"model population file"``).
    max_bytes : int
        The largest total declared uncompressed size accepted.
    kinds : mapping of member name → numpy dtype kind, optional
        The dtype kind (``"f"`` float, ``"U"`` unicode, ``"i"`` integer) of named members.
    default_kind : str
        The dtype kind of the other members.
    check_names : callable, optional
        Called with the member names (without ``.npy``) before any array is read; raises to
        refuse the file.

    Returns
    -------
    dict of member name (without ``.npy``) → ndarray

    Raises
    ------
    InvalidFileError
    """
    p = Path(path)
    src = f"{what} {p.name!r}"
    kinds = dict(kinds or {})
    if not p.is_file():
        raise InvalidFileError(f"{what} {str(p)!r} not found; check the path")
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
        raise InvalidFileError(
            f"{src} is not an .npz archive ({' '.join(str(e).split()) or type(e).__name__}); "
            "it may be truncated or another kind of file"
        ) from None
    out: dict[str, np.ndarray] = {}
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_NPZ_MEMBERS:
            raise InvalidFileError(
                f"{src} holds {len(infos)} members; at most {MAX_NPZ_MEMBERS} are read"
            )
        declared = sum(i.file_size for i in infos)
        if declared > max_bytes:
            raise InvalidFileError(
                f"{src} declares {_size(declared)} of uncompressed arrays; the limit is "
                f"{_size(max_bytes)} (is it a zip bomb, or too large a population?)"
            )
        names = [i.filename for i in infos]
        for i in infos:
            if not i.filename.endswith(".npy") or names.count(i.filename) > 1:
                raise InvalidFileError(
                    f"{src} has a member {_short(i.filename)!r} that is not one distinct .npy "
                    "array; write the file with numpy.savez"
                )
        if check_names is not None:
            check_names([n[:-4] for n in names])
        for info in infos:
            key = info.filename[:-4]
            want = kinds.get(key, default_kind)
            try:
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
                    if dtype.kind != want or dtype.hasobject:
                        raise InvalidFileError(
                            f"{src}: array {key!r} has dtype {dtype}; expected "
                            f"{_KIND_NAMES.get(want, want)}"
                        )
                    nbytes = math.prod(shape) * dtype.itemsize
                    if nbytes > info.file_size:
                        raise InvalidFileError(
                            f"{src}: array {key!r} claims shape {shape} ({_size(nbytes)}) but "
                            f"its member holds {_size(info.file_size)}; the file is corrupt"
                        )
                with zf.open(info) as fh:
                    out[key] = np.lib.format.read_array(fh, allow_pickle=False)
            except InvalidFileError:
                raise
            except (
                zipfile.BadZipFile,
                zlib.error,
                EOFError,
                OSError,
                ValueError,
                RuntimeError,  # NotImplementedError (an unsupported compression) included
                MemoryError,
            ) as e:
                raise InvalidFileError(
                    f"{src}: array {key!r} cannot be read "
                    f"({' '.join(str(e).split())[:120] or type(e).__name__}); the file is "
                    "truncated or corrupt"
                ) from None
    return out
