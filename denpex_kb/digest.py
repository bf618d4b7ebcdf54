"""Hashes for cache keys and fingerprints on the start-up path, without `hashlib`.

`hashlib` loads OpenSSL's `_hashlib`, 3 ms of every `match`. CPython's own modules give the same
digests: SHA-256 for the small keys whose values are recorded elsewhere (fingerprints), and
BLAKE2b for bulk content (a rule pack's bytes), which it hashes two to three times faster than
CPython's SHA-256 (OpenSSL's, with CPU instructions, is faster still, but not worth its import
for a few megabytes). hashlib is the fallback where the private modules are missing."""

from __future__ import annotations

try:
    from _sha2 import sha256  # CPython 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # CPython 3.11 and earlier
    except ImportError:  # pragma: no cover - not CPython
        from hashlib import sha256
try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - not CPython
    from hashlib import blake2b

__all__ = ["blake2b", "sha256"]
