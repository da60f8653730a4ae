"""The service's HTTP protocol: uvicorn's h11 protocol with a time limit on a request's head.

uvicorn waits for a request's line and headers for as long as the client likes: a client that
connects and sends nothing, or trickles its headers (slowloris), holds a connection for ever,
and with ``--max-connections`` a few hundred of them would turn every other client away. Here a
connection must deliver each request's complete head within ``header_timeout`` seconds of
being opened (or of the previous response): otherwise it is answered ``408`` with one line of
JSON and closed. The body has its own limit (:class:`distprivacy.service.app.Guard`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

#: The default time a request's line and headers may take to arrive, in seconds.
HEADER_TIMEOUT = 10.0


def protocol_class(header_timeout: float = HEADER_TIMEOUT) -> type:
    """uvicorn's ``H11Protocol`` with a ``header_timeout`` (module docstring), for
    ``uvicorn.run(..., http=protocol_class(t))``."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadTimeoutProtocol(H11Protocol):  # type: ignore[misc,valid-type]
        """H11Protocol whose connections must send each request's head in time."""

        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_head_timer()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the head is in: the body's turn
                self._disarm_head_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm_head_timer()  # the next request's head, on a kept-alive connection

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head_timer()
            super().connection_lost(exc)

        def _arm_head_timer(self) -> None:
            self._disarm_head_timer()
            self._head_timer = self.loop.call_later(header_timeout, self._head_too_slow)

        def _disarm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_too_slow(self) -> None:
            self._head_timer = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            body = json.dumps(
                {"error": f"the request's headers did not arrive within {header_timeout:g} s"}
            ).encode()
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                b"connection: close\r\ncontent-length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            self.transport.close()

    HeadTimeoutProtocol.__name__ = HeadTimeoutProtocol.__qualname__ = "HeadTimeoutProtocol"
    return HeadTimeoutProtocol
