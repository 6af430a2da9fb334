"""The setup portal's heap under the micropython command (64-bit, and the 32-bit
../shared/tools/micropython32, whose figures are the chip's, when it is there).

    python3 tools/bench_portal.py [ROUNDS] [--smallest]

The board side (tools/bench_portal_board.py) imports mimi.web.portal, runs it in a
thread on 127.0.0.1, and samples ``gc.mem_alloc()`` while this driver, ROUNDS times
(default 20), asks what a phone joining the access point asks: DNS for a check's name,
the OS check (a 302), the form, a save refused (a bad token) and a scan; then it stops
the portal. Figures, in bytes over the heap before the import: the import, the portal
running idle (after a collection), the live heap's peak while serving (collected and
read every 20 ms), and after it closed (the modules a save loads stay); with --smallest
also the smallest heap (-X heapsize, 16 KB steps) in which the same rounds all succeed
(minutes: each heap too small waits for its timeouts). A save that stores
is left out: it would close the portal.
"""
import http.client
import os
import socket
import subprocess
import sys
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _free(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    n = s.getsockname()[1]
    s.close()
    return n


def _get(port, method, path, host=None, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
    h = {"Host": host or "127.0.0.1:%d" % port}
    if body is not None:
        h["Content-Type"] = "application/x-www-form-urlencoded"
        body = urllib.parse.urlencode(body)
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def _dns(port, name):
    import dns.message
    import dns.query

    return dns.query.udp(dns.message.make_query(name, "A"), "127.0.0.1", port=port, timeout=3)


def measure(exe, rounds, heap="2M"):
    """{figure: bytes} for one micropython binary."""
    from host_sim import hostenv

    port, dns_port = _free(socket.SOCK_STREAM), _free(socket.SOCK_DGRAM)
    env = dict(os.environ, MICROPYPATH=hostenv.micropython_path(), MIMI_FLASH=os.path.join("/tmp", "mimi-bench-portal"))
    os.makedirs(env["MIMI_FLASH"] + "/data", exist_ok=True)
    p = subprocess.Popen([exe, "-X", "heapsize=" + heap, os.path.join(ROOT, "tools", "bench_portal_board.py"),
                          str(port), str(dns_port)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        return _rounds(p, port, dns_port, rounds)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _rounds(p, port, dns_port, rounds):
    while True:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError("the board ended before it was ready")
        if line.strip() == "ready":
            break
        if line.strip() == "failed":
            raise RuntimeError("the portal did not start")
    t0 = time.monotonic()
    import re

    for _ in range(rounds):
        assert _dns(dns_port, "connectivitycheck.gstatic.com").answer
        assert _get(port, "GET", "/generate_204", "connectivitycheck.gstatic.com")[0] == 302
        status, page = _get(port, "GET", "/")
        assert status == 200
        tok = re.search(rb'name="csrf" value="([0-9a-f]+)"', page).group(1).decode()
        assert _get(port, "POST", "/save", body={"csrf": tok, "tg_token": "bad", "tz": "+01:00"})[0] == 400
        assert _get(port, "GET", "/scan")[0] == 302
    took = time.monotonic() - t0
    out, _ = p.communicate("done\n", timeout=30)
    figs = {}
    for line in out.splitlines():
        k, _, v = line.partition(" ")
        if v.strip().lstrip("-").isdigit():
            figs[k] = int(v)
    figs["ms_per_round"] = int(took * 1000 / rounds)
    return figs


def main(rounds=20, search=False):
    from host_sim import hostenv

    exes = [("64-bit", hostenv.micropython_exe())]
    m32 = os.path.join(os.path.dirname(ROOT), "shared", "tools", "micropython32")
    for cand in (m32, "/work/shared/tools/micropython32"):
        if os.path.exists(cand):
            exes.append(("32-bit", cand))
            break
    print("setup portal, %d rounds of: DNS, OS check, form, refused save, scan" % rounds)
    for label, exe in exes:
        f = measure(exe, rounds)
        print("%s (%s):" % (label, exe))
        for k in ("heap_import", "heap_running", "heap_peak", "heap_closed"):
            print("  %-14s %7.1f KB" % (k, f[k] / 1024))
        print("  %-14s %7d ms (host CPU, loopback)" % ("per round", f["ms_per_round"]))
        if search:
            print("  %-14s %7s" % ("smallest heap", smallest(exe, rounds)))


def smallest(exe, rounds):
    """The smallest -X heapsize (16 KB steps from 64 KB) that serves ``rounds`` rounds."""
    kb = 64
    while kb <= 1024:
        try:
            measure(exe, rounds, "%dK" % kb)
            return "%d KB" % kb
        except Exception:  # noqa: BLE001 - MemoryError on the board: its answers stop
            kb += 16
    return "over 1 MB"


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--smallest"]
    main(int(args[0]) if args else 20, "--smallest" in sys.argv)
