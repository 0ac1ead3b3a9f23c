#!/usr/bin/env python3
# The sender (and the pod's sink) of hostport-dnat.ts: IPv4 UDP datagrams written as whole
# Ethernet frames on a packet socket (no routing, neighbour or IP output in the sender's
# namespace: the cheapest send there is), so that the node's path dominates the time.
# A veth delivers a frame to its peer in the sender's own system call (softirq on the same
# CPU), so the send loop's time is the sender's cost plus the node's and the pod's. Run
# inside a network namespace as root; standard modules of python3-minimal only.
#
#   send --dev IF --src-mac M --dst-mac M --src ADDR --count N
#     Prints `ready` and reads commands, one a line, on stdin:
#       build NAME DST DPORT new|one [DST_MAC]
#         Prebuilds N frames to DST:DPORT from --src: `new` gives each its own source port
#         (N distinct flows: a new conntrack entry each), `one` a single source port (one
#         flow: the first frame makes the entry, the others find it). DST_MAC overrides
#         --dst-mac. Prints `built NAME`.
#       send NAME
#         Writes the N frames of NAME back to back; prints `sent SENT SECONDS PER_FRAME`:
#         frames sent, the loop's time, and the median chunk's time per frame (CHUNK below).
#   sink --port P
#     A UDP socket bound to P and never read, with the smallest receive buffer: datagrams to P
#     are delivered (and then dropped by the full socket), no ICMP error is generated. Prints
#     `ready` and sleeps until killed.
import argparse
import socket
import struct
import sys
import time

ETH_P_IP = 0x0800
SOL_PACKET = 263
PACKET_QDISC_BYPASS = 20
# The send loop is timed in chunks of this many frames (tens of µs, under a millisecond even
# through 1,000 rules): on a shared machine the scheduler or the hypervisor takes the CPU away
# for milliseconds at a time, and a chunk it interrupted is an outlier, which the median chunk
# leaves out.
CHUNK = 20


def ip_checksum(header: bytes) -> int:
    total = sum(struct.unpack('!10H', header))
    total = (total & 0xFFFF) + (total >> 16)
    total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame(dst_mac: bytes, src_mac: bytes, src: bytes, dst: bytes, sport: int, dport: int) -> bytes:
    # UDP checksum 0: none (IPv4), which conntrack's checksum validation accepts.
    udp = struct.pack('!HHHH', sport, dport, 12, 0) + b'hpb!'
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack('!H', ip_checksum(ip)) + ip[12:]
    return dst_mac + src_mac + struct.pack('!H', ETH_P_IP) + ip + udp


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(':', ''))


def send(args: argparse.Namespace) -> None:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((args.dev, 0))
    # Straight to the driver (a veth has no queue to bypass, but it saves the qdisc lookup).
    s.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
    src_mac, dst_mac, src = mac(args.src_mac), mac(args.dst_mac), socket.inet_aton(args.src)
    sets: dict[str, list[bytes]] = {}
    print('ready', flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == 'build':
            name, dst, dport, kind = words[1], words[2], int(words[3]), words[4]
            to_mac = mac(words[5]) if len(words) > 5 else dst_mac
            dst_b = socket.inet_aton(dst)
            sets[name] = [
                frame(to_mac, src_mac, src, dst_b, 1024 + (i if kind == 'new' else 0), dport)
                for i in range(args.count)
            ]
            print(f'built {name}', flush=True)
        elif words[0] == 'send':
            frames = sets[words[1]]
            write, clock = s.send, time.perf_counter
            sent = 0
            chunks = []
            t0 = last = clock()
            for i in range(0, len(frames), CHUNK):
                for f in frames[i : i + CHUNK]:
                    try:
                        write(f)
                        sent += 1
                    except OSError:
                        pass  # ENOBUFS: counted as not sent
                now = clock()
                if i + CHUNK <= len(frames):
                    chunks.append(now - last)
                last = now
            chunks.sort()
            median = chunks[len(chunks) // 2] if chunks else last - t0
            print(f'sent {sent} {last - t0:.6f} {median / CHUNK:.9f}', flush=True)
        else:
            print(f'error unknown command {words[0]}', flush=True)


def sink(args: argparse.Namespace) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 0)
    s.bind(('0.0.0.0', args.port))
    print('ready', flush=True)
    while True:
        time.sleep(3600)


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest='cmd', required=True)
    a = sub.add_parser('send')
    a.add_argument('--dev', required=True)
    a.add_argument('--src-mac', required=True)
    a.add_argument('--dst-mac', required=True)
    a.add_argument('--src', required=True)
    a.add_argument('--count', type=int, required=True)
    b = sub.add_parser('sink')
    b.add_argument('--port', type=int, required=True)
    args = p.parse_args()
    if args.cmd == 'send':
        send(args)
    else:
        sink(args)


if __name__ == '__main__':
    main()
