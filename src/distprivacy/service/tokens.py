"""Login tokens, sessions and the steward's signing key at rest (docs/serve.md).

A token is 32 random bytes (``dps_`` + URL-safe base64); the service stores only its SHA-256.
The steward's Ed25519 signing key is stored once per steward token, encrypted with AES-256-GCM
under HKDF-SHA256 of that token: only a request presenting the token (or a browser session
opened with it) can decrypt it. A browser session keeps the token's key-encryption key wrapped
under HKDF-SHA256 of the session cookie's own random value, which only the browser holds.
Everything here uses the standard library and ``cryptography`` (a core dependency).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from typing import Any

#: Every token starts with this (so a leaked one is recognisable in logs and by scanners).
TOKEN_PREFIX = "dps_"


def new_token() -> str:
    """A fresh login token: 32 random bytes from the OS's secure generator."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """SHA-256 of a token or session value (hex): what the database keeps."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same(a: str, b: str) -> bool:
    """Constant-time comparison of two strings (CSRF tokens)."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def derive(secret: str, purpose: str) -> bytes:
    """A 32-byte key for ``purpose`` from a high-entropy ``secret`` (HKDF-SHA256)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    hkdf = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=None,
        info=b"distprivacy-serve|" + purpose.encode(),
    )
    return hkdf.derive(secret.encode("utf-8"))


def seal(key: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """AES-256-GCM: a fresh 12-byte nonce, then the ciphertext and tag."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = os.urandom(12)
    return nonce + AESGCM(key).encrypt(nonce, plaintext, aad)


def unseal(key: bytes, blob: bytes, aad: bytes) -> bytes | None:
    """The plaintext of :func:`seal`, or None when the key or the blob is wrong."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    if not isinstance(blob, bytes | bytearray) or len(blob) < 12 + 16:
        return None
    try:
        return AESGCM(key).decrypt(bytes(blob[:12]), bytes(blob[12:]), aad)
    except InvalidTag:
        return None


def new_signing_key() -> tuple[Any, bytes]:
    """A new Ed25519 private key and its raw 32 bytes."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    private = ed25519.Ed25519PrivateKey.generate()
    raw = private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return private, raw


def signing_key(raw: bytes) -> Any:
    """The :class:`~distprivacy.ledger.StewardKey` of raw Ed25519 bytes (in memory only)."""
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from distprivacy.ledger import StewardKey

    return StewardKey(ed25519.Ed25519PrivateKey.from_private_bytes(raw))
