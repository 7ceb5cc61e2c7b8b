#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Cut the kernel's BTF (its .BTF section) out of a boot image, into a raw BTF file that
`bpftool btf dump file` reads.

    tools/btf-from-image.py IMAGE OUT

IMAGE is a kernel as a distribution ships it: an ELF vmlinux (its .BTF section is copied), an
arm64 Image (Debian's arm64 vmlinuz is one, uncompressed: a flat copy of the kernel's
loaded image, no section headers), or either compressed with gzip. In a flat image the
section is found by its header: the BTF magic 0xeb9f, version 1, a 24-byte header, types
first and strings right after them, the strings starting and ending with a NUL. The kernel
has exactly one such blob (the modules' BTF is not in the image); more than one candidate
is an error rather than a guess. Exit 0 and OUT written, or 1 with the reason on stderr.
"""
import gzip
import struct
import sys

BTF_MAGIC = b"\x9f\xeb\x01\x00"   # magic 0xeb9f (little-endian), version 1, flags 0
HDR = struct.Struct("<HBBIIIII")  # magic version flags hdr_len type_off type_len str_off str_len


def die(msg):
    print(f"btf-from-image: {msg}", file=sys.stderr)
    sys.exit(1)


def elf_btf(data):
    """The .BTF section of an ELF64 little-endian file, or None when it has none."""
    if data[4] != 2 or data[5] != 1:
        die("only 64-bit little-endian ELF files are read")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0 or shnum == 0:
        return None
    def sh(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        name, _, _, _, off, size = sh(i)[:6]
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end] == b".BTF":
            return data[off:off + size]
    return None


def flat_btf(data):
    """The one well-formed BTF blob in a flat image."""
    found = []
    pos = data.find(BTF_MAGIC)
    while pos >= 0:
        if pos + HDR.size <= len(data):
            _, _, _, hdr_len, type_off, type_len, str_off, str_len = HDR.unpack_from(data, pos)
            s = pos + hdr_len + str_off
            end = s + str_len
            if (hdr_len == HDR.size and type_off == 0 and type_len > 0 and
                    str_off == type_len and str_len > 0 and end <= len(data) and
                    data[s] == 0 and data[end - 1] == 0):
                found.append((pos, end))
        pos = data.find(BTF_MAGIC, pos + 1)
    if not found:
        die("no BTF in the image (a kernel without CONFIG_DEBUG_INFO_BTF?)")
    if len(found) > 1:
        die("%d BTF candidates in the image at offsets %s: not cutting one by guess" %
            (len(found), ", ".join(hex(p) for p, _ in found)))
    pos, end = found[0]
    return data[pos:end]


def main():
    if len(sys.argv) != 3:
        die("usage: btf-from-image.py IMAGE OUT")
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    btf = elf_btf(data) if data[:4] == b"\x7fELF" else None
    if btf is None:
        btf = flat_btf(data)
    with open(sys.argv[2], "wb") as f:
        f.write(btf)


if __name__ == "__main__":
    main()
