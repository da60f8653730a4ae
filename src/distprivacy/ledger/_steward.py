"""The steward's signing key: who may approve plans, register datasets and set budgets.

A ledger has two keys held by two roles (docs/ledger.md, "Two keys, two roles"):

* the **ledger key** (``L.db.key``, symmetric, :mod:`distprivacy.ledger._keys`): whoever
  releases needs it — it chains and MACs the rows, encrypts the stored plans and keys the
  identities;
* the **steward's signing key** (an Ed25519 private key, a file of the steward's own, 0600):
  every decision of the steward — a secret and its budget, a registered dataset, an approved
  plan, a budget change — is a signed event. The ledger holds only the public key (in its
  genesis and its head), so whoever can release cannot approve: a plan edited and "approved"
  by a releaser fails its signature.

Ed25519 (RFC 8032) from the ``cryptography`` package. The private key file is PKCS#8 PEM,
unencrypted (protect it like an SSH key: mode 0600, on the steward's machine only); the public
key is shown as 64 hex digits and a short fingerprint (the first 16 hex digits of its
SHA-256), which the steward keeps elsewhere to check the ledger's (``ledger verify
--steward-public-key``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distprivacy.ledger._entry import LedgerError

#: The domain separator of every signature a steward makes for a ledger.
SIGNING_CONTEXT = b"distprivacy-ledger-steward-v1|"


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:  # pragma: no cover - cryptography is a core dependency
        raise LedgerError(
            "the steward's signatures need the cryptography package: pip install cryptography"
        ) from None
    return ed25519


def public_fingerprint(public_hex: str) -> str:
    """A short name of a public key: the first 16 hex digits of SHA-256 of its raw bytes."""
    return hashlib.sha256(bytes.fromhex(public_hex)).hexdigest()[:16]


@dataclass(frozen=True)
class StewardPublicKey:
    """The public half, as the ledger stores it (raw 32 bytes as hex)."""

    hex: str

    def __post_init__(self) -> None:
        ok = isinstance(self.hex, str) and len(self.hex) == 64
        try:
            ok = ok and len(bytes.fromhex(self.hex)) == 32
        except ValueError:
            ok = False
        if not ok:
            raise LedgerError(
                f"a steward's public key is 64 hex digits (Ed25519), got {self.hex!r:.80}"
            )

    @property
    def fingerprint(self) -> str:
        return public_fingerprint(self.hex)

    def verify(self, signature: str, message: bytes) -> bool:
        """Whether ``signature`` (hex) is this key's signature of ``message``."""
        from cryptography.exceptions import InvalidSignature

        ed25519 = _crypto()
        try:
            sig = bytes.fromhex(signature)
            key = ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(self.hex))
            key.verify(sig, SIGNING_CONTEXT + message)
        except (InvalidSignature, ValueError, TypeError):
            return False
        return True


class StewardKey:
    """A steward's Ed25519 private key, loaded from its file (:meth:`load`) or made anew
    (:meth:`generate`).

    Parameters
    ----------
    private : Ed25519PrivateKey
        Use :meth:`load` or :meth:`generate`.
    path : Path or None
        Where it was read from or written to.
    """

    def __init__(self, private: Any, path: Path | None = None) -> None:
        self._private = private
        self.path = path

    @property
    def public(self) -> StewardPublicKey:
        from cryptography.hazmat.primitives import serialization

        raw = self._private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return StewardPublicKey(raw.hex())

    def sign(self, message: bytes) -> str:
        """The signature (hex) of ``message`` under :data:`SIGNING_CONTEXT`."""
        return self._private.sign(SIGNING_CONTEXT + message).hex()

    @classmethod
    def generate(cls, path: str | Path) -> StewardKey:
        """Make a new key and write it to ``path`` (PKCS#8 PEM, mode 0600, created
        exclusively: an existing file is refused, never overwritten)."""
        from cryptography.hazmat.primitives import serialization

        if not isinstance(path, str | Path):
            raise LedgerError(f"a steward key is a file path, got {type(path).__name__}")
        from distprivacy.outputs import names_a_directory

        if names_a_directory(path):  # Path would drop the slash and write a file `new`
            raise LedgerError(
                f"{str(path)!r} names a directory (it ends with a path separator, . or ..); "
                f"give the steward key a file path, e.g. {str(Path(path) / 'steward.key')!r}"
            )
        p = Path(path)
        private = _crypto().Ed25519PrivateKey.generate()
        pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise LedgerError(
                f"{str(p)!r} already exists; a new steward key needs a new file"
            ) from None
        except OSError as e:
            raise LedgerError(f"cannot create the steward key {str(p)!r}: {e.strerror}") from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(pem)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as e:
            p.unlink(missing_ok=True)
            raise LedgerError(f"cannot write the steward key {str(p)!r}: {e.strerror}") from None
        return cls(private, p)

    @classmethod
    def load(cls, path: str | Path) -> StewardKey:
        """Read a steward's private key (one line naming the problem when the file is missing,
        not a regular file, readable by others, or not an Ed25519 private key)."""
        from cryptography.hazmat.primitives import serialization

        if isinstance(path, StewardKey):
            return path
        if not isinstance(path, str | Path):
            raise LedgerError(f"a steward key is a file path, got {type(path).__name__}")
        p = Path(path)
        if not p.is_file():
            why = "is not a regular file" if p.exists() else "does not exist"
            raise LedgerError(
                f"the steward key {str(p)!r} {why}; make one with `distprivacy ledger keygen FILE`"
            )
        mode = p.stat().st_mode & 0o077
        if mode:
            raise LedgerError(
                f"the steward key {str(p)!r} is readable by others (mode "
                f"{p.stat().st_mode & 0o777:o}); make it private: chmod 600 {p}"
            )
        try:
            raw = p.read_bytes()
            if len(raw) > 64 * 1024:
                raise ValueError("too large for a key")
            private = serialization.load_pem_private_key(raw, password=None)
        except (OSError, ValueError, TypeError) as e:
            raise LedgerError(
                f"the steward key {str(p)!r} cannot be read as an unencrypted PEM private key "
                f"({type(e).__name__})"
            ) from None
        if not isinstance(private, _crypto().Ed25519PrivateKey):
            raise LedgerError(f"the steward key {str(p)!r} is not an Ed25519 key")
        return cls(private, p)

    def __repr__(self) -> str:
        return f"StewardKey(public {self.public.fingerprint})"
