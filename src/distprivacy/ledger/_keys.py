"""The ledger's secret key and what it is used for (see :mod:`distprivacy.ledger`).

``ledger init L.db`` creates a 32-byte key in ``L.db.key`` (mode 0600, created exclusively).
From it, by HMAC-SHA256 with a label per purpose, come independent subkeys:

* ``chain`` — each release row's hash chain and the ledger head (tamper evidence);
* ``identity`` — the keyed dataset identities and property keys (a reader without the key
  cannot test a guessed dataset or record against them);
* ``encrypt`` — the plan stored with each release (its fitted moments are exact population
  statistics): an HMAC-SHA256 keystream in counter mode, XORed with the plaintext, with a
  fresh 16-byte nonce per row, then an HMAC-SHA256 tag over nonce and ciphertext
  (encrypt-then-MAC; standard library only);
* ``seal`` — the seal of a plan a steward approved
  (:meth:`~distprivacy.mechanisms.plans.Plan.seal`).

Whoever holds the key file can do everything the library does — recompute the chain after an
edit included: keep it readable by the ledger's owner only, and back it up with the ledger.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from distprivacy.ledger._entry import LedgerError

#: Bytes of a ledger key.
KEY_BYTES = 32
_NONCE = 16
_TAG = 32


def key_path(ledger: str | Path) -> Path:
    """Where a ledger's key lives: beside it, ``<ledger>.key``."""
    return Path(str(ledger) + ".key")


def create_key(ledger: str | Path) -> bytes:
    """Create the ledger's key file (0600, exclusive); refuses an existing one."""
    p = key_path(ledger)
    key = secrets.token_bytes(KEY_BYTES)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise LedgerError(f"{str(p)!r} already exists; a new ledger needs a new key") from None
    except OSError as e:
        raise LedgerError(f"cannot create the ledger's key {str(p)!r}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(key.hex().encode() + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as e:
        p.unlink(missing_ok=True)
        raise LedgerError(f"cannot write the ledger's key {str(p)!r}: {e.strerror}") from None
    return key


def read_key(ledger: str | Path) -> bytes:
    """The ledger's key (one-line LedgerError when it is missing or malformed)."""
    p = key_path(ledger)
    if not p.is_file():
        raise LedgerError(
            f"the ledger's key {str(p)!r} is missing: restore it from the backup made with "
            "`distprivacy ledger backup` (without it the ledger cannot be verified or written)"
        )
    try:
        text = p.read_bytes().strip()
        key = bytes.fromhex(text.decode("ascii"))
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise LedgerError(f"the ledger's key {str(p)!r} cannot be read ({e})") from None
    if len(key) != KEY_BYTES:
        raise LedgerError(f"the ledger's key {str(p)!r} is not a {KEY_BYTES}-byte key")
    return key


def subkey(key: bytes, purpose: str) -> bytes:
    """An independent key for ``purpose`` (HMAC-SHA256 of the label under the ledger key)."""
    return hmac.new(key, b"distprivacy-ledger|" + purpose.encode(), hashlib.sha256).digest()


def mac(key: bytes, purpose: str, data: bytes) -> str:
    """HMAC-SHA256 of ``data`` under the ``purpose`` subkey, as hex."""
    return hmac.new(subkey(key, purpose), data, hashlib.sha256).hexdigest()


def _keystream(k: bytes, nonce: bytes, n: int) -> bytes:
    blocks = (n + 31) // 32
    return b"".join(
        hmac.new(k, nonce + i.to_bytes(8, "big"), hashlib.sha256).digest() for i in range(blocks)
    )[:n]


def _xor(a: bytes, b: bytes) -> bytes:
    n = len(a)
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(n, "big")


def encrypt(key: bytes, plaintext: bytes) -> str:
    """``"enc1:" + base64(nonce ‖ ciphertext ‖ tag)`` (module docstring)."""
    nonce = secrets.token_bytes(_NONCE)
    ct = _xor(plaintext, _keystream(subkey(key, "encrypt"), nonce, len(plaintext)))
    tag = hmac.new(subkey(key, "encrypt-tag"), nonce + ct, hashlib.sha256).digest()
    return "enc1:" + base64.b64encode(nonce + ct + tag).decode("ascii")


def decrypt(key: bytes, token: str, what: str) -> bytes:
    """Inverse of :func:`encrypt`; a token that fails its tag is refused (one line)."""
    try:
        if not token.startswith("enc1:"):
            raise ValueError("not an encrypted field")
        raw = base64.b64decode(token[5:], validate=True)
    except (ValueError, AttributeError):
        raise LedgerError(f"{what} is not an encrypted field of this ledger") from None
    if len(raw) < _NONCE + _TAG:
        raise LedgerError(f"{what} is truncated")
    nonce, ct, tag = raw[:_NONCE], raw[_NONCE:-_TAG], raw[-_TAG:]
    want = hmac.new(subkey(key, "encrypt-tag"), nonce + ct, hashlib.sha256).digest()
    if not hmac.compare_digest(tag, want):
        raise LedgerError(f"{what} fails its authentication tag: it was modified")
    return _xor(ct, _keystream(subkey(key, "encrypt"), nonce, len(ct)))
