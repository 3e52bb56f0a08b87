"""What the test bed's packet programs share (scripts/testbed-link.py, the link profiles, and
scripts/testbed-censor.py, the fet censor): a TUN device opened without packet information, the
IPv4 packet in what lo's egress hands it, and a clean start for a long-lived process. Standard
library only; imported from the scripts' own directory."""
import fcntl
import os
import struct

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
ETH_HEADER = 14


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def ip_packet(frame):
    """The IPv4 packet in what the TUN device gave us: lo's egress hands over its (all-zero)
    Ethernet header (type 0x0800) too. None for anything that is not a whole IPv4 header."""
    if len(frame) >= ETH_HEADER + 20 and frame[12:14] == b"\x08\x00" and frame[ETH_HEADER] >> 4 == 4:
        return frame[ETH_HEADER:]
    if len(frame) >= 20 and frame[0] >> 4 == 4:
        return frame
    return None


def close_inherited_descriptors():
    """A long-lived process started from a test must not keep its starter's descriptors: Swift's
    Foundation learns that a child has exited when the socket it gave the child is closed, so a
    forwarder that kept it open (it outlives `testbed profile`) hung the test waiting for that
    command forever."""
    for name in os.listdir("/proc/self/fd"):
        descriptor = int(name)
        if descriptor > 2:
            try:
                os.close(descriptor)
            except OSError:
                pass  # the directory listing's own descriptor, already gone
