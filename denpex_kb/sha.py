"""SHA-256 for cache keys and fingerprints on the start-up path.

`hashlib` loads OpenSSL's `_hashlib`, 3 ms of every `match`; CPython's own SHA-2 module gives
the same digests and loads in a tenth of that. hashlib is the fallback where the private
module is missing (another interpreter, a stripped build)."""

from __future__ import annotations

try:
    from _sha2 import sha256  # CPython 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # CPython 3.11 and earlier
    except ImportError:  # pragma: no cover - not CPython
        from hashlib import sha256

__all__ = ["sha256"]
