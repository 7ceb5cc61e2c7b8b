# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A Python program whose behaviour is known, for tracekit's Python frames (3.9+).

usage: pywork.py MODE SECONDS [DUMP]

  mix    the main thread: drive_a and drive_b each call handler, which spends 3:1 in
         leaf_hot and leaf_cold (the same loop, 3000 and 1000 turns), three lines of pure
         bytecode each; threads: Shape.area (a method), sort_driver -> sorted(key=keyfn)
         (Python called back from C), and waiter -> wait_on_lock (blocked on a lock that
         is released every 20 ms, then taken again: off-CPU in one known frame chain).
         DUMP gets, once the waiter waits, the interpreter's own view of every thread's
         stack (traceback of sys._current_frames()) with its native id.
  alloc  hold_memory keeps allocating 64 KiB bytearrays and holds the last 256 (64 MiB),
         leak_memory keeps every 4 KiB one it makes (growth).
  exit   mix's main thread for SECONDS, then the process exits.
  compact  compact_here, for SECONDS: fragments memory and writes
         /proc/sys/vm/compact_memory (root): migrations (compaction) with a Python stack.
  work   fixed work: drive_a and drive_b, SECONDS * 100 times each, in the main thread alone
         (for timing: the same work traced and untraced).
"""
import sys
import threading
import time


def leaf_hot(n):
    a = b = c = 1000    # past the small ints (-5..256) CPython keeps: every turn costs the same
    for i in range(n):
        a += 1
        b += 2
        c += 3
    return a + b + c


def leaf_cold(n):
    a = b = c = 1000
    for i in range(n):
        a += 1
        b += 2
        c += 3
    return a + b + c


def handler():
    leaf_hot(3000)
    leaf_cold(1000)


def drive_a():
    handler()


def drive_b():
    handler()


class Shape:
    def __init__(self, side):
        self.side = side

    def area(self):
        s = 0
        for i in range(2000):
            s += self.side * self.side
        return s


def method_worker(stop):
    sh = Shape(3)
    while not stop.is_set():
        sh.area()


def keyfn(x):
    s = 0
    for i in range(200):
        s += i
    return -x


def sort_driver(stop):
    data = list(range(200))
    while not stop.is_set():
        sorted(data, key=keyfn)


def wait_on_lock(lock, stop):
    while not stop.is_set():
        if lock.acquire(timeout=1):
            lock.release()


def waiter(lock, stop):
    wait_on_lock(lock, stop)


def holder(lock, stop):
    while not stop.is_set():
        lock.acquire()
        time.sleep(0.02)
        lock.release()
        time.sleep(0.0005)


def dump(path, threads, at):
    """One line per thread: NAME NATIVE_ID, then its frames outermost first, FUNCTION:LINE.

    Taken when the waiter's innermost frame is wait_on_lock at line AT (its acquire), in one
    go: the stacks are read and checked while this thread holds the GIL, so no thread moves
    between the check and what is written (a check before a separate read raced: the waiter
    was at its release by then)."""
    import os
    import traceback
    deadline = time.time() + 5
    while True:
        frames = sys._current_frames()
        stacks = {name: traceback.extract_stack(frames[t.ident])
                  for name, t in threads.items() if t.ident in frames}
        w = stacks.get("waiter")
        if (w and w[-1].name == "wait_on_lock" and w[-1].lineno == at) or \
                time.time() >= deadline:
            break
        time.sleep(0.001)
    with open(path + ".tmp", "w") as f:
        for name, t in sorted(threads.items()):
            f.write("%s %d %s\n" % (name, t.native_id,
                                     " ".join("%s:%d" % (x.name, x.lineno)
                                              for x in stacks.get(name, ()))))
    os.rename(path + ".tmp", path)


def mix(seconds, dump_path):
    stop = threading.Event()
    lock = threading.Lock()
    threads = {
        "method": threading.Thread(target=method_worker, args=(stop,)),
        "sort": threading.Thread(target=sort_driver, args=(stop,)),
        "holder": threading.Thread(target=holder, args=(lock, stop)),
        "waiter": threading.Thread(target=waiter, args=(lock, stop)),
    }
    for t in threads.values():
        t.daemon = True
        t.start()
    try:
        run_main(seconds, dump_path, threads)
    finally:
        stop.set()
        for t in threads.values():
            t.join()


def run_main(seconds, dump_path, threads):
    if dump_path:
        # the waiter sits in lock.acquire() nearly all the time: take its stack there
        dump(dump_path, threads, wait_on_lock.__code__.co_firstlineno + 2)
    end = time.time() + seconds
    while time.time() < end:
        drive_a()
        drive_b()


def hold_memory(seconds):
    held = []
    end = time.time() + seconds
    while time.time() < end:
        held.append(bytearray(65536))
        if len(held) > 256:
            del held[0]


def leak_memory(seconds):
    kept = []
    end = time.time() + seconds
    while time.time() < end:
        kept.append(bytearray(4096))
        if len(kept) % 256 == 0:
            time.sleep(0.001)


def compact_here(seconds):
    """Fragments physical memory (touches 64 MiB of its own, gives every other page back),
    then asks the kernel to compact it (as root): the pages compaction migrates, in this
    thread's context, are this function's."""
    import mmap
    end = time.time() + seconds
    while time.time() < end:
        m = mmap.mmap(-1, 64 << 20)
        for off in range(0, len(m), 4096):
            m[off] = 1
        for off in range(0, len(m), 8192):
            m.madvise(mmap.MADV_DONTNEED, off, 4096)
        with open("/proc/sys/vm/compact_memory", "w") as f:
            f.write("1")
        m.close()
        time.sleep(0.1)


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    dump_path = sys.argv[3] if len(sys.argv) > 3 else None
    if mode in ("mix", "exit"):
        mix(seconds, dump_path)
    elif mode == "work":
        for i in range(int(seconds * 100)):
            drive_a()
            drive_b()
    elif mode == "alloc":
        t = threading.Thread(target=leak_memory, args=(seconds,))
        t.start()
        hold_memory(seconds)
        t.join()
    elif mode == "compact":
        compact_here(seconds)
    else:
        sys.exit("unknown mode " + mode)


main()
