#!/usr/bin/env python3
"""Connects to a unix stream socket and joins it to stdin and stdout.

usage: unix-bridge.py PATH

The host side of the vm-tests' control and causality port (vm-tests/relay-host.sh
runs it as a bash coprocess): bash has no unix sockets of its own, and the
harness does not depend on socat. Bytes from stdin go to the socket as they
come, bytes from the socket go to stdout unbuffered; it exits when either
side ends.
"""
import os
import selectors
import socket
import sys


def main() -> int:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(sys.argv[1])
    sel = selectors.DefaultSelector()
    stdin = sys.stdin.fileno()
    stdout = sys.stdout.fileno()
    sel.register(stdin, selectors.EVENT_READ)
    sel.register(sock, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            if key.fileobj is sock:
                data = sock.recv(65536)
                if not data:
                    return 0
                while data:
                    data = data[os.write(stdout, data):]
            else:
                data = os.read(stdin, 65536)
                if not data:
                    return 0
                sock.sendall(data)


if __name__ == "__main__":
    sys.exit(main())
