#!/usr/bin/env python3
# SCTP packets without a kernel SCTP stack (the test kernel has none: CONFIG_IP_SCTP is not
# set), for the kernel tier's SCTP policy and hostPort tests. Raw IP sockets of protocol 132
# work without the SCTP module, and nftables matches `meta l4proto sctp` and `th dport` on
# any kernel. Run inside a network namespace as root; standard modules of python3-minimal only.
#
#   send --dst ADDR --sport N --dport N [--src ADDR] [--token T] [--chunk init|init-ack]
#        [--vtag N] [--init-tag N] [--bad-checksum]
#     One SCTP packet, from --src when given (bound: policy sees a pod's own source; else the
#     kernel picks the route's source address). `init` (the default):
#     verification tag 0 and an INIT chunk whose initiate tag is --init-tag (random when left
#     out); `init-ack`: the answer to such an INIT, with --vtag set to the INIT's initiate tag
#     (as a real receiver does, and as the kernel's SCTP conntrack checks). The token (no
#     spaces) rides in a parameter a real receiver skips. Prints `sent key=value ...`.
#   listen [--seconds S]
#     Prints `ready`, then `packet key=value ...` for each SCTP packet delivered to this
#     namespace (both families): family, src, dst, sport, dport, vtag, chunk (type number),
#     tag (the INIT/INIT-ACK initiate tag), token, crc (ok|bad). Until killed, or S seconds.
import argparse
import os
import select
import socket
import struct
import sys
import time

SCTP = 132
CHUNK = {'init': 1, 'init-ack': 2}
# An unassigned parameter type whose top bits (10) tell a receiver to skip it and carry on
# without reporting it (RFC 9260 §3.2.1): the token does not change what the chunk means.
TOKEN_PARAM = 0x8FFF
STATE_COOKIE = 7


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def param(kind: int, value: bytes) -> bytes:
    body = struct.pack('!HH', kind, 4 + len(value)) + value
    return body + b'\0' * (-len(body) % 4)


def packet(sport: int, dport: int, vtag: int, chunk: str, tag: int, token: str) -> bytes:
    # Initiate tag, a_rwnd, outbound and inbound streams, initial TSN.
    fixed = struct.pack('!IIHHI', tag, 65535, 1, 1, tag)
    params = param(TOKEN_PARAM, token.encode())
    if chunk == 'init-ack':  # an INIT ACK must carry a state cookie
        params += param(STATE_COOKIE, token.encode())
    value = fixed + params
    chunk_bytes = struct.pack('!BBH', CHUNK[chunk], 0, 4 + len(value)) + value
    header = struct.pack('!HHII', sport, dport, vtag, 0)
    data = header + chunk_bytes
    # The CRC32c is stored least significant byte first (RFC 9260 appendix A, as Linux does).
    return data[:8] + struct.pack('<I', crc32c(data)) + data[12:]


def line(kind: str, **fields: object) -> str:
    return ' '.join([kind] + [f'{k}={v}' for k, v in fields.items()])


def family_of(address: str) -> int:
    return socket.AF_INET6 if ':' in address else socket.AF_INET


def send(a: argparse.Namespace) -> None:
    family = family_of(a.dst)
    tag = a.init_tag if a.init_tag is not None else int.from_bytes(os.urandom(4), 'big') | 1
    data = packet(a.sport, a.dport, a.vtag, a.chunk, tag, a.token)
    if a.bad_checksum:
        data = data[:8] + bytes(b ^ 0xFF for b in data[8:12]) + data[12:]
    with socket.socket(family, socket.SOCK_RAW, SCTP) as s:
        if a.src:
            s.bind((a.src, 0))
        s.sendto(data, (a.dst, 0))
    print(line('sent', src=a.src or '', dst=a.dst, sport=a.sport, dport=a.dport, vtag=a.vtag,
               chunk=CHUNK[a.chunk], tag=tag, token=a.token), flush=True)


def describe(family: int, src: str, dst: str, data: bytes) -> str | None:
    if len(data) < 12:
        return None
    sport, dport, vtag, _ = struct.unpack('!HHII', data[:12])
    crc_ok = struct.unpack('<I', data[8:12])[0] == crc32c(data[:8] + b'\0' * 4 + data[12:])
    chunk, tag, token = '', '', ''
    if len(data) >= 16:
        chunk = str(data[12])
        end = min(len(data), 12 + struct.unpack('!H', data[14:16])[0])
        if data[12] in CHUNK.values() and end >= 32:
            tag = str(struct.unpack('!I', data[16:20])[0])
            at = 32  # after the chunk header and the INIT's fixed fields
            while at + 4 <= end:
                kind, length = struct.unpack('!HH', data[at:at + 4])
                if length < 4:
                    break
                if kind == TOKEN_PARAM:
                    token = data[at + 4:at + length].decode(errors='replace')
                at += length + (-length % 4)
    return line('packet', family=4 if family == socket.AF_INET else 6, src=src, dst=dst,
                sport=sport, dport=dport, vtag=vtag, chunk=chunk, tag=tag, token=token,
                crc='ok' if crc_ok else 'bad')


def listen(a: argparse.Namespace) -> None:
    v4 = socket.socket(socket.AF_INET, socket.SOCK_RAW, SCTP)
    v6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, SCTP)
    # An IPv6 raw socket gets no IP header: the destination comes as ancillary data.
    v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
    print('ready', flush=True)
    deadline = time.monotonic() + a.seconds if a.seconds else None
    while deadline is None or time.monotonic() < deadline:
        ready, _, _ = select.select([v4, v6], [], [], 0.2)
        for s in ready:
            if s is v4:
                raw, _ = v4.recvfrom(65535)
                ihl = (raw[0] & 0x0F) * 4
                src, dst = (socket.inet_ntop(socket.AF_INET, raw[i:i + 4]) for i in (12, 16))
                seen = describe(socket.AF_INET, src, dst, raw[ihl:])
            else:
                raw, ancillary, _, peer = v6.recvmsg(65535, socket.CMSG_SPACE(20))
                dst = ''
                for level, kind, value in ancillary:
                    if level == socket.IPPROTO_IPV6 and kind == socket.IPV6_PKTINFO:
                        dst = socket.inet_ntop(socket.AF_INET6, value[:16])
                seen = describe(socket.AF_INET6, peer[0], dst, raw)
            if seen:
                print(seen, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description='SCTP packets on raw sockets')
    modes = parser.add_subparsers(dest='mode', required=True)
    s = modes.add_parser('send')
    s.add_argument('--src')
    s.add_argument('--dst', required=True)
    s.add_argument('--sport', type=int, required=True)
    s.add_argument('--dport', type=int, required=True)
    s.add_argument('--token', default='')
    s.add_argument('--chunk', choices=list(CHUNK), default='init')
    s.add_argument('--vtag', type=int, default=0)
    s.add_argument('--init-tag', type=int)
    s.add_argument('--bad-checksum', action='store_true')
    modes.add_parser('listen').add_argument('--seconds', type=float, default=0)
    a = parser.parse_args()
    if a.mode == 'send':
        send(a)
    else:
        listen(a)


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
