#!/usr/bin/env python3
"""Keeps every regular file created under WATCH (recursively) as a hard link under KEEP, so that files
tests delete when they finish (postern's logs, state directories) can still be checked for leaks at the
end of the run (scripts/check-leaks.py). A hard link shares the inode: what is written after the link
is made is kept too, and an atomic rename keeps the same inode. Runs until SIGTERM or SIGINT, then links
whatever is still present and exits.  Usage: keep-files.py WATCH KEEP
"""
import ctypes
import os
import signal
import struct
import sys

IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x2, 0x8, 0x80, 0x100
IN_Q_OVERFLOW, IN_ISDIR, IN_NONBLOCK = 0x4000, 0x40000000, 0o4000
MASK = IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE

watch_root, keep_root = (os.path.abspath(p) for p in sys.argv[1:3])
os.makedirs(watch_root, exist_ok=True)
os.makedirs(keep_root, exist_ok=True)
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0:
    sys.exit("keep-files: inotify_init1 failed")
watches = {}
kept_inodes = set()
stopping = False


def keep(path, renamed=False):
    """Links `path` under KEEP once per inode; a rename target is linked under its new name too, so
    that a file written atomically (temporary, then rename) is kept under its final name."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if os.path.basename(path) == ".keep-files-stop" or not (st.st_mode & 0o170000 == 0o100000):
        return
    if (st.st_dev, st.st_ino) in kept_inodes and not renamed:
        return
    relative = os.path.relpath(path, watch_root)
    target = os.path.join(keep_root, relative)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    suffix = 0
    while os.path.lexists(target if suffix == 0 else f"{target}~{suffix}"):
        suffix += 1
    try:
        os.link(path, target if suffix == 0 else f"{target}~{suffix}")
        kept_inodes.add((st.st_dev, st.st_ino))
    except OSError:
        pass


def watch_tree(directory):
    for current, _, files in os.walk(directory):
        if current not in watches.values():
            wd = libc.inotify_add_watch(fd, current.encode(), MASK)
            if wd >= 0:
                watches[wd] = current
        for name in files:
            keep(os.path.join(current, name))


def stop(*_):
    global stopping
    stopping = True
    os.close(os.open(os.path.join(watch_root, ".keep-files-stop"), os.O_CREAT | os.O_WRONLY, 0o600))


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
watch_tree(watch_root)
print("keep-files: watching", flush=True)
while not stopping:
    try:
        data = os.read(fd, 65536)
    except InterruptedError:
        continue
    offset = 0
    while offset + 16 <= len(data):
        wd, mask, _, length = struct.unpack_from("iIII", data, offset)
        name = data[offset + 16:offset + 16 + length].rstrip(b"\0").decode(errors="surrogateescape")
        offset += 16 + length
        if mask & IN_Q_OVERFLOW:
            watch_tree(watch_root)
            continue
        parent = watches.get(wd)
        if parent is None or not name:
            continue
        path = os.path.join(parent, name)
        if mask & IN_ISDIR:
            watch_tree(path)
        else:
            keep(path, renamed=bool(mask & IN_MOVED_TO))
watch_tree(watch_root)
try:
    os.unlink(os.path.join(watch_root, ".keep-files-stop"))
except OSError:
    pass
