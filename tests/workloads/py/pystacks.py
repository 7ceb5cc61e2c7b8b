# tracekit stacks' Python workload (tests/integration/test_stacks.c): one thread
# blocked in threading.Lock.acquire() under lock_outer -> lock_inner, one in
# time.sleep under sleep_outer -> sleep_inner, the main thread in join. Writes
# "lock TID LINE", "sleep TID LINE" (the line each blocks on) to the file named by
# argv[1] once both are blocked, then waits until killed. With argv[2] "spin", a
# third thread spins in spin_inner (on a CPU when read), "spin TID" written too.
import os
import sys
import threading
import time

held = threading.Lock()
held.acquire()
ready = {}


def lock_inner():
    ready["lock"] = threading.get_native_id()
    held.acquire()  # blocks: LOCK_LINE


def lock_outer():
    lock_inner()


def sleep_inner():
    ready["sleep"] = threading.get_native_id()
    while True:
        time.sleep(3600)  # blocks: SLEEP_LINE


def sleep_outer():
    sleep_inner()


def spin_inner():
    ready["spin"] = threading.get_native_id()
    n = 0
    while True:
        n += 1


def line_of(tag):
    with open(__file__) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(tag) and "def " not in text:
                return n
    return 0


def main():
    a = threading.Thread(target=lock_outer, daemon=True)
    b = threading.Thread(target=sleep_outer, daemon=True)
    a.start()
    b.start()
    spin = len(sys.argv) > 2 and sys.argv[2] == "spin"
    if spin:
        threading.Thread(target=spin_inner, daemon=True).start()
    while len(ready) < 2 + spin:
        time.sleep(0.01)
    time.sleep(0.2)
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write("lock %d %d\n" % (ready["lock"], line_of("LOCK_LINE")))
        f.write("sleep %d %d\n" % (ready["sleep"], line_of("SLEEP_LINE")))
        if spin:
            f.write("spin %d\n" % ready["spin"])
    os.rename(tmp, sys.argv[1])
    a.join()


main()
