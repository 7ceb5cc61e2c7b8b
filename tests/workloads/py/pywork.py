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
  work   fixed work: drive_a and drive_b, SECONDS * 100 times each, in the main thread alone
         (for timing: the same work traced and untraced).
"""
import sys
import threading
import time


def leaf_hot(n):
    a = b = c = 0
    for i in range(n):
        a += 1
        b += 2
        c += 3
    return a + b + c


def leaf_cold(n):
    a = b = c = 0
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


def dump(path, threads):
    """One line per thread: NAME NATIVE_ID, then its frames outermost first, FUNCTION:LINE."""
    import os
    import traceback
    frames = sys._current_frames()
    with open(path + ".tmp", "w") as f:
        for name, t in sorted(threads.items()):
            st = traceback.extract_stack(frames[t.ident])
            f.write("%s %d %s\n" % (name, t.native_id,
                                     " ".join("%s:%d" % (x.name, x.lineno) for x in st)))
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
        at = wait_on_lock.__code__.co_firstlineno + 2
        deadline = time.time() + 5
        while time.time() < deadline:
            st = sys._current_frames().get(threads["waiter"].ident)
            if st is not None and st.f_code.co_name == "wait_on_lock" and st.f_lineno == at:
                break
            time.sleep(0.001)
        dump(dump_path, threads)
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
    else:
        sys.exit("unknown mode " + mode)


main()
