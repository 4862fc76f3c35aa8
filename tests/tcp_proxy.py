"""A TCP proxy on 127.0.0.1 that can stop forwarding: a server or network that stops answering
while both ends' kernels still acknowledge every packet (the case keepalives cannot see)."""

from __future__ import annotations

import contextlib
import socket
import threading


class StallingProxy:
    """Forwards ``127.0.0.1:port`` to ``target_port``; :meth:`stall` stops forwarding both ways
    (every socket stays open: nothing is refused or reset); :meth:`close` drops everything."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, name="stalling proxy", daemon=True).start()

    def stall(self) -> None:
        self._flowing.clear()

    def _keep(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            self._keep(client)
            self._keep(server)
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            if not self._flowing.is_set():  # stalled: hold the bytes, answer nothing, until closed
                self._closed.wait()
                return
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()
            self._sockets.clear()

    def __enter__(self) -> StallingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
