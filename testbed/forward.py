"""TCP forwarding on loopback, in one background thread: what kube-proxy does for a Service.

The API server calls Kueue's webhook and visibility Services at their ClusterIP (in the cluster's
loopback service range, 127.100.0.0/16 by default), port 443; the Kueue process listens on ports
of its own on 127.0.0.1 (kueue_controller.KueuePorts). One forwarder serves every cluster that
runs, which is why clusters running side by side need distinct service ranges.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


def forward_to(host: str, port: int) -> Handler:
    """A handler that relays the connection to host:port, or drops it when nothing listens there."""

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer))

    return handle


class Forwarder:
    """Listeners on loopback addresses, each with its own handler; stop() closes them all."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="e2e-forwarder", daemon=True)
        self._thread.start()
        self._servers: dict[tuple[str, int], asyncio.Server] = {}
        self._connections: dict[tuple[str, int], set[asyncio.StreamWriter]] = {}

    def _call(self, coro: Awaitable[Any]) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
        return future.result(timeout=10)

    def listen(self, host: str, port: int, handler: Handler, ssl_context: ssl.SSLContext | None = None) -> None:
        """Serve host:port with `handler` (over TLS with `ssl_context`), replacing whatever served
        that address before."""
        self.close(host, port)
        connections = self._connections.setdefault((host, port), set())

        async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connections.add(writer)
            try:
                await handler(reader, writer)
            finally:
                connections.discard(writer)

        async def start() -> asyncio.Server:
            return await asyncio.start_server(tracked, host, port, reuse_address=True, ssl=ssl_context)

        self._servers[(host, port)] = self._call(start())

    def close(self, host: str, port: int) -> None:
        """Stop serving host:port and drop its open connections, which the API server would
        otherwise keep using (HTTP keep-alive) as if nothing had changed."""
        server = self._servers.pop((host, port), None)
        connections = self._connections.pop((host, port), set())

        async def stop() -> None:
            if server is not None:
                server.close()
            for writer in list(connections):
                writer.close()
            if server is not None:
                await server.wait_closed()

        self._call(stop())

    def stop(self) -> None:
        for host, port in list(self._servers):
            self.close(host, port)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
