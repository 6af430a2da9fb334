"""The MicroPython side of ``tools/bench_portal.py``, which runs it (see there for how):
the setup portal in a thread, this thread sampling the GC heap until the driver's
requests are done (a line on stdin), then the figures, one per line."""
import gc
import os
import sys
import time

import _thread


def main():
    port, dns_port = int(sys.argv[1]), int(sys.argv[2])
    gc.collect()
    base = gc.mem_alloc()
    from mimi.web import portal

    gc.collect()
    imported = gc.mem_alloc()
    _thread.start_new_thread(portal.run, (), {"port": port, "dns_port": dns_port, "host": "127.0.0.1",
                                               "address": "127.0.0.1:%d" % port, "reason": "bench"})
    t0 = time.ticks_ms()
    while not portal.state["running"] or portal.state["app"] is None:
        if time.ticks_diff(time.ticks_ms(), t0) > 10000:  # it failed (a MemoryError in a small heap)
            print("failed")
            sys.exit(1)
        time.sleep_ms(10)
    time.sleep_ms(300)
    gc.collect()
    idle = gc.mem_alloc()
    print("ready", flush=True) if hasattr(print, "flush") else print("ready")
    import select

    p = select.poll()
    p.register(sys.stdin, select.POLLIN)
    peak = 0
    while not p.poll(20):  # live heap, sampled: collected, then read, every 20 ms
        gc.collect()
        peak = max(peak, gc.mem_alloc())
    portal.stop()
    time.sleep_ms(1000)
    gc.collect()
    after = gc.mem_alloc()
    print("heap_base %d" % base)
    print("heap_import %d" % (imported - base))
    print("heap_running %d" % (idle - base))
    print("heap_peak %d" % (peak - base))
    print("heap_closed %d" % (after - base))
    print("gc_free_running %d" % gc.mem_free())


main()
