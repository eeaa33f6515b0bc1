"""The tests' DNS guard: a name lookup of anything but an IP literal raises.

Tests, benchmarks and sandboxes stay on 127.0.0.0/8, and a DNS query must never leave
the machine. While :func:`install` is in force (in the test process, from
``tests/conftest.py``; in every Python child process of the tests, from
``sitecustomize.py`` beside this file, which the tests put on ``PYTHONPATH`` with
``FOCUSED_DNS_GUARD`` set), every way Python resolves a name goes through
:func:`check`: ``socket.getaddrinfo`` (and so Twisted's ``GAIResolver``, asyncio,
``socket.create_connection``, urllib), ``gethostbyname``/``gethostbyname_ex`` (Twisted's
``ThreadedResolver``, Scrapy's ``CachingThreadedResolver``), the reverse lookups
``gethostbyaddr``/``getnameinfo``, and a host name given to a socket's ``connect``,
``connect_ex``, ``sendto`` or ``bind`` (resolved inside CPython, past the functions
above). A host is allowed only when the C library reads it as a numeric address
(``getaddrinfo`` with ``AI_NUMERICHOST``, which never queries anything); anything else,
``localhost`` included (its answer depends on ``/etc/hosts`` and ``nsswitch.conf``: not
provably local), raises :class:`DNSGuardError` before any query. The project answers
``localhost`` itself (RFC 6761), without a lookup. A ``connect``, ``connect_ex`` or
``sendto`` to an IP literal outside 127.0.0.0/8 and ``::1`` is refused as well, before
any packet (``ConnectionRefusedError``; ``connect_ex`` returns ``ECONNREFUSED``): a crawl
whose scope checks failed would try one, and the test fails instead.

:class:`DNSGuardError` is a ``socket.gaierror`` (the error of a name that does not
resolve), so code that handles a failed lookup behaves as for such a name; and since
such code may swallow it (Twisted's resolver turns it into a ``DNSLookupError``), each
refusal is also written to standard error and appended to the file named by
``FOCUSED_DNS_GUARD``, which ``tests/conftest.py`` reads after each test: a test during
which any of its processes tried a lookup fails.

A test may stand for a host name with ``FOCUSED_DNS_GUARD_HOSTS`` (JSON: name -> IP
literal in 127.0.0.0/8) in a child's environment: the guard answers those names itself, as
``/etc/hosts`` would, with no query (the system resolver's path, as a crawl takes it
without the project's resolver).

Pure standard library: it is imported by ``sitecustomize`` before anything else.
"""

from __future__ import annotations

import _socket
import errno
import ipaddress
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: the environment variable that turns the guard on in a child: the refusal log's path
ENV = "FOCUSED_DNS_GUARD"
#: JSON name -> loopback IP literal: names the guard answers itself (a child's, read at install)
HOSTS_ENV = "FOCUSED_DNS_GUARD_HOSTS"
#: this folder (``sitecustomize.py`` is here): put first on a child's ``PYTHONPATH``
FOLDER = str(Path(__file__).resolve().parent)

_real_getaddrinfo = _socket.getaddrinfo
_installed = False
#: the names answered here (``FOCUSED_DNS_GUARD_HOSTS``): loopback literals only
_hosts: dict[str, str] = {}


def _answered(host: object) -> str | None:
    """The literal :data:`HOSTS_ENV` gives ``host``, else None."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return None
    return _hosts.get(host.lower().rstrip("."))


def _load_hosts() -> None:
    import json

    table = json.loads(os.environ.get(HOSTS_ENV) or "{}")
    for name, address in table.items():
        try:
            loopback = ipaddress.ip_address(address).is_loopback
        except ValueError:
            loopback = False
        if loopback:
            _hosts[name.lower().rstrip(".")] = address
        else:  # never a way off the machine: the name stays refused, and the test fails
            refuse(f"{name} -> {address}", f"{HOSTS_ENV} (not a loopback literal)")


class DNSGuardError(socket.gaierror):
    """A name lookup the tests refused (it would have queried DNS)."""


def is_literal(host: object) -> bool:
    """Whether ``host`` is an IP address the C library reads without any lookup."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str) or not host:
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    try:
        _real_getaddrinfo(host, None, 0, 0, 0, socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        return False
    return True


def refuse(host: object, how: str, why: str = "never a host name") -> DNSGuardError:
    """Record the refused lookup of ``host`` (by ``how``) and return the error to raise."""
    message = (
        f"DNS guard: {how}({host!r}) refused: tests use IP literals in 127.0.0.0/8 only,"
        f" {why} (a DNS query must not leave the machine, nor any packet)"
    )
    print(message, file=sys.stderr, flush=True)
    log = os.environ.get(ENV)
    if log and log != "1":
        try:
            with open(log, "a", encoding="utf-8") as file:
                file.write(f"{message} [pid {os.getpid()}]\n")
        except OSError:
            pass
    return DNSGuardError(socket.EAI_NONAME, message)


def check(host: object, how: str) -> None:
    """Raise :class:`DNSGuardError` unless ``host`` is an IP literal."""
    if not is_literal(host):
        raise refuse(host, how)


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    mapped = _answered(host)
    if mapped is not None:
        return _real_getaddrinfo(mapped, port, *args, **kwargs)
    if host is not None:  # None: the local (passive or loopback) address, no lookup
        check(host, "getaddrinfo")
    return _real_getaddrinfo(host, port, *args, **kwargs)


def _by_name(real: Callable[..., Any], how: str) -> Callable[..., Any]:
    def guarded(host: Any, *args: Any) -> Any:
        mapped = _answered(host)
        if mapped is not None:
            answer = real(mapped, *args)
            return (str(host), [], answer[2]) if isinstance(answer, tuple) else answer
        check(host, how)
        return real(host, *args)

    guarded.__name__ = guarded.__qualname__ = real.__name__
    guarded.__doc__ = real.__doc__
    return guarded


def _reverse(host: Any) -> Any:
    raise refuse(host, "gethostbyaddr")  # a PTR query, unless /etc/hosts has the address


def _getnameinfo(sockaddr: Any, flags: int) -> Any:
    if not flags & socket.NI_NUMERICHOST:
        raise refuse(sockaddr[0] if sockaddr else sockaddr, "getnameinfo")
    return _real_getnameinfo(sockaddr, flags)


def _getfqdn(name: str = "") -> str:
    """``socket.getfqdn`` of an IP literal is the literal (http.server asks it of the
    address it binds: a reverse lookup); of anything else, refused."""
    if is_literal(name) and name not in ("0.0.0.0", "::"):
        return name
    raise refuse(name or "<this host's name>", "getfqdn")


_real_getnameinfo = _socket.getnameinfo


def is_loopback(host: str) -> bool:
    """Whether the IP literal ``host`` is in 127.0.0.0/8 or ``::1`` (IPv4-mapped too)."""
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:  # a spelling only the C library reads ("127.1", "0x7f000001")
        try:
            packed = _real_getaddrinfo(host, None, socket.AF_INET, 0, 0, socket.AI_NUMERICHOST)
            ip = ipaddress.ip_address(packed[0][4][0])
        except (OSError, UnicodeError, IndexError):
            return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def _address_method(
    real: Callable[..., Any], how: str, allow_empty: bool, outgoing: bool = False
) -> Callable[..., Any]:
    """``outgoing`` (connect, connect_ex, sendto): an address off loopback is refused
    too, before any packet (``connect_ex`` answers ``ECONNREFUSED``, as a closed port)."""

    def guarded(self: socket.socket, *args: Any) -> Any:
        address = args[-1]
        if self.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
            host = address[0]
            if not (allow_empty and host == "") and not is_literal(host):
                raise refuse(host, f"socket.{how}")
            if outgoing and not is_loopback(host):
                error = refuse(host, f"socket.{how}", "never another address")
                if how == "connect_ex":
                    return errno.ECONNREFUSED
                raise ConnectionRefusedError(errno.ECONNREFUSED, str(error))
        return real(self, *args)

    guarded.__name__ = guarded.__qualname__ = how
    return guarded


def with_guard(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a child process, with the guard on (``FOCUSED_DNS_GUARD`` and this
    folder first on ``PYTHONPATH``)."""
    out = dict(env)
    out[ENV] = os.environ.get(ENV) or "1"
    paths = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and p != FOLDER]
    out["PYTHONPATH"] = os.pathsep.join([FOLDER, *paths])
    return out


_real_popen_init = subprocess.Popen.__init__


def _popen_init(self: subprocess.Popen, *args: Any, **kwargs: Any) -> None:
    """A child started with an ``env`` of its own (a test's, often without
    ``PYTHONPATH``) gets the guard too."""
    if kwargs.get("env") is not None:
        kwargs["env"] = with_guard(kwargs["env"])
    _real_popen_init(self, *args, **kwargs)


def install(log: str | None = None) -> None:
    """Turn the guard on in this process and in the child processes it starts (idempotent);
    ``log``: the file each refusal is appended to (default: ``FOCUSED_DNS_GUARD``'s)."""
    global _installed
    os.environ.update(with_guard({k: v for k, v in os.environ.items()}))
    if log is not None:
        os.environ[ENV] = log
    if _installed:
        return
    _installed = True
    _socket.getaddrinfo = _getaddrinfo  # socket.getaddrinfo calls it at each lookup
    for module in (socket, _socket):
        module.gethostbyname = _by_name(_socket.gethostbyname, "gethostbyname")
        module.gethostbyname_ex = _by_name(_socket.gethostbyname_ex, "gethostbyname_ex")
        module.gethostbyaddr = _reverse
        module.getnameinfo = _getnameinfo
    socket.getfqdn = _getfqdn
    cls = socket.socket
    cls.connect = _address_method(_socket.socket.connect, "connect", False, True)  # type: ignore[method-assign]
    cls.connect_ex = _address_method(_socket.socket.connect_ex, "connect_ex", False, True)  # type: ignore[method-assign]
    cls.sendto = _address_method(_socket.socket.sendto, "sendto", False, True)  # type: ignore[method-assign]
    cls.bind = _address_method(_socket.socket.bind, "bind", True)  # type: ignore[method-assign]
    subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]
    _load_hosts()


class Refusals:
    """The DNS guard's refusals (one line each) logged since the last :meth:`take`."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.offset = log.stat().st_size

    def take(self) -> list[str]:
        """The refusals logged since the last call (or the test's start)."""
        with self.log.open("rb") as file:
            file.seek(self.offset)
            data = file.read()
        self.offset += len(data)
        return data.decode("utf-8", "replace").splitlines()


def install_from_env() -> None:
    """Install the guard when ``FOCUSED_DNS_GUARD`` is set (``sitecustomize``)."""
    if os.environ.get(ENV):
        install()
