"""Prints a pcap file's header and, for its first record, the bytes
captured of the original length, how far (in whole seconds) its time is
from now, and the bytes in hex: what builtins_skboutput.test checks."""
import struct
import sys
import time

for path in sys.argv[1:]:
    with open(path, "rb") as f:
        data = f.read()
    magic, major, minor, _, _, snaplen, linktype = struct.unpack("<IHHiIII", data[:24])
    print(f"{path}: magic {magic:08x} v{major}.{minor} snaplen {snaplen} linktype {linktype}")
    sec, usec, incl, orig = struct.unpack("<IIII", data[24:40])
    ago = abs(int(time.time() - (sec + usec / 1e6)))
    print(f"{path}: {incl} bytes of {orig}, {ago} s from now: {data[40:40 + incl].hex()}")
