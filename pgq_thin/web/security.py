"""Who may act on the dashboard, and proof that a form was sent by its own page.

- **The token.** Actions need the token the server was started with (``--token`` or
  ``PGQ_WEB_TOKEN``); there is no default, and a server started without one is read-only.
  A person signs in once with the token and a name (who they are, written in the log of
  every action they take); the browser then holds a signed session cookie (``HttpOnly``,
  ``SameSite=Strict``, 12 hours). A script may instead send ``Authorization: Bearer TOKEN``
  on each ``POST`` (and its name in ``X-Pgq-Actor``).
- **CSRF.** Every form of a signed-in page carries a token derived from the session
  (HMAC of the session id); an action whose form token does not match is refused, and so is
  any ``POST`` whose ``Origin`` names another site. Bearer requests need no form token: a
  browser never adds that header on its own.
- Signatures use a key made at start (``secrets``): a restart signs everyone out.

Nothing here decides what the database lets the role do: that is the database's answer
(:meth:`pgq_thin.admin.AsyncAdmin.privileges`), checked separately.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

__all__ = ["SESSION_COOKIE", "Session", "Signer", "check_token", "valid_actor"]

SESSION_COOKIE = "pgq_session"
FLASH_COOKIE = "pgq_flash"
SESSION_SECONDS = 12 * 3600
MAX_ACTOR = 64


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_token(expected: str | None, given: str | None) -> bool:
    """The token given matches the server's (constant time); never true without one."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def valid_actor(name: str) -> str | None:
    """A name fit for the log (printable, 1..64 characters, no quotes), or None."""
    name = name.strip()
    if not 1 <= len(name) <= MAX_ACTOR:
        return None
    if any(not ch.isprintable() or ch in "\"'\\" for ch in name):
        return None
    return name


@dataclass(frozen=True)
class Session:
    """A signed-in person: their name and the session id the CSRF token derives from."""

    actor: str
    sid: str
    expires: float


class Signer:
    """Signs and checks session and flash cookies and CSRF tokens with a key of this process."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def _mac(self, purpose: str, data: bytes) -> str:
        return _b64(hmac.new(self._key, purpose.encode() + b"\0" + data, hashlib.sha256).digest())

    def sign(self, purpose: str, value: object) -> str:
        data = json.dumps(value, separators=(",", ":")).encode()
        return f"{_b64(data)}.{self._mac(purpose, data)}"

    def unsign(self, purpose: str, text: str | None) -> object | None:
        if not text or text.count(".") != 1:
            return None
        body, mac = text.split(".")
        try:
            data = _unb64(body)
        except ValueError:
            return None
        if not hmac.compare_digest(mac, self._mac(purpose, data)):
            return None
        try:
            result: object = json.loads(data)
        except ValueError:
            return None
        return result

    def new_session(self, actor: str) -> tuple[Session, str]:
        """A session for ``actor`` and its cookie value."""
        session = Session(actor, secrets.token_urlsafe(16), time.time() + SESSION_SECONDS)
        cookie = self.sign("session", [session.actor, session.sid, session.expires])
        return session, cookie

    def session(self, cookie: str | None) -> Session | None:
        """The session of a cookie, or None when absent, forged or expired."""
        value = self.unsign("session", cookie)
        if not isinstance(value, list) or len(value) != 3:
            return None
        actor, sid, expires = value
        if not isinstance(actor, str) or not isinstance(sid, str):
            return None
        if not isinstance(expires, int | float) or expires < time.time():
            return None
        return Session(actor, sid, float(expires))

    def csrf(self, session: Session) -> str:
        """The form token of a session."""
        return self._mac("csrf", session.sid.encode())

    def check_csrf(self, session: Session, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(self.csrf(session), str(given))
